"""The CLI against the running test stack: status, select with the explained breakdown, sync a file."""

import json
from pathlib import Path

from tests.integration.catalog import plugin_sync, run_cli, tool, unique
from toolsel.stack import Endpoints


def test_status_exits_zero_when_every_service_answers(endpoints: Endpoints) -> None:
    done = run_cli(endpoints, "status")
    assert done.returncode == 0, done.stdout + done.stderr
    for service in ("selector", "learner", "indexer"):
        assert service in done.stdout


def test_status_names_an_unknown_service(endpoints: Endpoints) -> None:
    done = run_cli(endpoints, "status", "--service", "nobody")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: unknown service 'nobody': toolsel's services are selector, learner, indexer"


def test_sync_file_then_select_explain(endpoints: Endpoints, tmp_path: Path) -> None:
    tenant = unique("tenant")
    sync = plugin_sync(unique("cli"), tenant, [tool("get_weather"), tool("send_email")])
    path = tmp_path / "plugin.json"
    path.write_text(sync.model_dump_json())
    synced = run_cli(endpoints, "sync", str(path))
    assert synced.returncode == 0, synced.stderr
    assert "inserted" in synced.stdout

    chosen = run_cli(
        endpoints, "select", "will it rain in Paris", "--tenant", tenant, "--explain", "--dry-run", "--json"
    )
    assert chosen.returncode == 0, chosen.stderr
    reply = json.loads(chosen.stdout)
    assert reply["tools"][0]["name"] == "get_weather"
    explained = run_cli(endpoints, "select", "will it rain in Paris", "--tenant", tenant, "--explain", "--dry-run")
    assert "similarity" in explained.stdout
    assert "thompson" in explained.stdout


def test_select_with_bad_input_prints_the_typed_error(endpoints: Endpoints) -> None:
    done = run_cli(endpoints, "select", "x", "--k", "99")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: select: k: Input should be less than or equal to 50"
