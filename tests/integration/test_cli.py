"""The CLI against the running test stack: status (as the operator, and as an identity, which may not ask), select
with the explained breakdown, sync a file."""

import asyncio
import json
import signal
from pathlib import Path

import asyncpg

from tests.integration.catalog import cli_env, eventually, many_tools, plugin_sync, run_cli, tool, unique
from toolsel.stack import AGENT, TOOLSEL_COMMAND, Endpoints, Stack


def test_status_exits_zero_when_every_service_answers(endpoints: Endpoints) -> None:
    done = run_cli(endpoints, "status")
    assert done.returncode == 0, done.stdout + done.stderr
    for service in ("selector", "learner", "indexer"):
        assert service in done.stdout


def test_status_with_a_tenants_identity_says_it_may_not_ask_rather_than_down(stack: Stack) -> None:
    """NATS refuses an identity the health subjects: status waited out each request and said every service was
    down (`error: down: selector (Timeout); ...`)."""
    assert stack.nats is not None
    done = run_cli(Endpoints(stack.nats.login(AGENT), ""), "status", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("error: not permitted for user default.agent: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    found = json.loads(done.stdout)
    assert found["down"] == {}
    assert {s["status"] for s in found["services"]} == {"not asked"}


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


def _ctrl_c_reaches_it() -> None:
    """A shell starts background jobs (this test run, perhaps) with SIGINT ignored, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def test_an_interrupted_sync_says_the_indexer_applies_it_anyway(
    endpoints: Endpoints, pool: asyncpg.Pool, tmp_path: Path
) -> None:
    plugin = unique("interrupted")
    path = tmp_path / "plugin.json"
    path.write_text(plugin_sync(plugin, unique("tenant"), many_tools(600, examples=12)).model_dump_json())
    command = [*TOOLSEL_COMMAND, "sync", str(path)]
    pipe = asyncio.subprocess.PIPE
    process = await asyncio.create_subprocess_exec(
        *command, env=cli_env(endpoints), stdout=pipe, stderr=pipe, preexec_fn=_ctrl_c_reaches_it
    )

    async def written() -> int:
        count: int = await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = $1", plugin)
        return count

    assert await eventually(written, timeout_s=60) == 600  # written, now embedding: the reply is not back yet
    process.send_signal(signal.SIGINT)
    stderr = (await asyncio.wait_for(process.communicate(), timeout=60))[1].decode()
    assert process.returncode == 130, stderr
    assert f"0 of 1 syncs reported back; the sync of {plugin} was on its way" in stderr
    assert f"toolsel tools list --plugin {plugin}" in stderr


def test_select_with_bad_input_prints_the_typed_error(endpoints: Endpoints) -> None:
    done = run_cli(endpoints, "select", "x", "--k", "99")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: select: k: Input should be less than or equal to 50"
