"""The CLI against the running test stack: an unknown tool is named, a failure is one line with exit code 1,
output piped keeps identifiers whole, listings speak JSON and CSV, admin writes confirm in one line, select takes
every request field."""

import asyncio
import csv
import io
import json
import os
import re
import subprocess
from pathlib import Path

from tests.integration.catalog import plugin_sync, run_cli, tool, unique
from toolsel.client import ToolselClient
from toolsel.stack import TOOLSEL_COMMAND, Endpoints

LONG_PLUGIN = "a-plugin-whose-name-is-longer-than-a-narrow-table-shows"
LONG_DESCRIPTION = "Current weather and forecast for a city: hourly rain, wind and temperature for the next ten days."


def _synced(endpoints: Endpoints, folder: Path, plugin: str = "cli", **fields: object) -> tuple[str, str]:
    """Sync a small plugin through the CLI; returns its id and tenant."""
    plugin, tenant = unique(plugin), unique("tenant")
    sync = plugin_sync(plugin, tenant, [tool("get_weather", **fields), tool("send_email")])
    path = folder / f"{plugin}.json"
    path.write_text(sync.model_dump_json())
    done = run_cli(endpoints, "sync", str(path))
    assert done.returncode == 0, done.stderr
    return plugin, tenant


def _one_error_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_feedback_for_an_unknown_tool_is_refused_before_it_is_sent(endpoints: Endpoints) -> None:
    line = _one_error_line(run_cli(endpoints, "feedback", "submit", "--tool", "hr/nope", "--rating", "0.5"), 1)
    assert "unknown tool hr/nope" in line


async def test_feedback_for_a_removed_tool_is_refused_before_it_is_sent(
    client: ToolselClient, endpoints: Endpoints
) -> None:
    plugin, tenant = unique("gone"), unique("t")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather")]))
    await client.remove_plugin(plugin, tenant)
    args = ("feedback", "submit", "--tool", f"{plugin}/get_weather", "--rating", "0.9", "--tenant", tenant)
    line = _one_error_line(await asyncio.to_thread(run_cli, endpoints, *args), 1)
    assert f"tool {plugin}/get_weather was removed on" in line


def test_an_unknown_tool_or_plugin_is_one_line_with_exit_code_1(endpoints: Endpoints) -> None:
    assert "not_found" in _one_error_line(run_cli(endpoints, "tools", "show", "hr", "nope"), 1)
    assert "unknown plugin 'nobody-here'" in _one_error_line(run_cli(endpoints, "plugins", "remove", "nobody-here"), 1)


def test_an_export_to_a_path_it_cannot_write_or_from_a_database_it_cannot_reach_says_which(
    endpoints: Endpoints, tmp_path: Path
) -> None:
    """A bad --out was a FileNotFoundError with exit 1, and an unreachable PostgreSQL was blamed on NATS."""
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("{}")
    line = _one_error_line(run_cli(endpoints, "export", "--out", str(a_file / "out")), 2)
    assert line.startswith(f"error: --out {a_file / 'out'}")
    down = Endpoints(endpoints.nats_url, "postgresql://toolsel:secret@127.0.0.1:1/toolsel")
    line = _one_error_line(run_cli(down, "export", "--out", str(tmp_path / "out")), 3)
    assert "cannot reach PostgreSQL at postgresql://toolsel:***@127.0.0.1:1/toolsel" in line
    assert "NATS" not in line


def test_a_wrong_admin_token_is_one_line(endpoints: Endpoints) -> None:
    line = _one_error_line(run_cli(endpoints, "tools", "list", admin_token="wrong"), 1)
    assert "missing or wrong admin token" in line


def _piped(endpoints: Endpoints, *args: str) -> str:
    """``toolsel ARGS`` with stdout a pipe and no COLUMNS, as ``toolsel ... | cat`` runs it; its stdout."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env |= {"TOOLSEL_NATS_URL": endpoints.nats_url, "TOOLSEL_DATABASE_URL": endpoints.database_url}
    done = subprocess.run([*TOOLSEL_COMMAND, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_piped_tables_keep_identifiers_whole(endpoints: Endpoints, tmp_path: Path) -> None:
    plugin, tenant = _synced(endpoints, tmp_path, LONG_PLUGIN, description=LONG_DESCRIPTION)
    ref = f"{plugin}/get_weather"
    for args, whole in (
        (("tools", "list", "--plugin", plugin), ref),
        (("tools", "versions", plugin, "get_weather"), LONG_DESCRIPTION),
        (("select", "rain in Paris", "--tenant", tenant, "--explain"), ref),
        (("admin", "test-selection", "rain in Paris", "--tenant", tenant), ref),
        (("admin", "page-mappings", "list", "--plugin", plugin), plugin),
        (("feedback", "metrics", "--tool", ref), plugin),
    ):
        out = _piped(endpoints, *args)
        assert whole in out, args
        assert "…" not in out, args
    assert "thompson" in _piped(endpoints, "select", "rain in Paris", "--tenant", tenant, "--explain")


def test_an_empty_selection_says_so_in_one_line(endpoints: Endpoints) -> None:
    shown = _piped(endpoints, "select", "xyzzy", "--plugin", unique("nobody"), "--no-rerank").splitlines()
    assert shown[0].startswith("no match: ")
    assert "create a custom tool" in shown[0]  # nothing left to offer (seed 002)
    last = shown[-1]
    assert last.startswith("0 tools · ")
    assert " ms in the selector · method " in last
    assert " · tokens 0 of " in last


def test_listings_as_json_and_csv(endpoints: Endpoints, tmp_path: Path) -> None:
    plugin, _ = _synced(endpoints, tmp_path)
    as_json = json.loads(run_cli(endpoints, "tools", "list", "--plugin", plugin, "--format", "json").stdout)
    as_csv = list(
        csv.DictReader(io.StringIO(run_cli(endpoints, "tools", "list", "--plugin", plugin, "--format", "csv").stdout))
    )
    assert (
        sorted(t["name"] for t in as_json["tools"])
        == sorted(row["name"] for row in as_csv)
        == ["get_weather", "send_email"]
    )
    mappings = run_cli(endpoints, "admin", "page-mappings", "list", "--plugin", plugin, "--format", "csv").stdout
    assert "/inbox*" in mappings
    no_csv = run_cli(endpoints, "tools", "show", plugin, "get_weather", "--format", "csv")
    assert "'csv' is not one of 'table', 'json'" in _one_error_line(no_csv, 2)


def test_feedback_listings_as_json_and_csv(endpoints: Endpoints, tmp_path: Path) -> None:
    plugin, _ = _synced(endpoints, tmp_path)
    ref = f"{plugin}/get_weather"
    assert json.loads(run_cli(endpoints, "feedback", "list", "--tool", ref, "--json").stdout)["feedback"] == []
    header = run_cli(endpoints, "feedback", "list", "--tool", ref, "--format", "csv").stdout
    assert header.startswith("event_id,tenant_id,rating,")
    quality = json.loads(run_cli(endpoints, "feedback", "metrics", "--tool", ref, "--json").stdout)
    assert [(t["plugin_id"], t["name"]) for t in quality["tools"]] == [(plugin, "get_weather")]


def test_status_and_analytics_metrics_as_a_table_or_json(endpoints: Endpoints) -> None:
    status = json.loads(run_cli(endpoints, "status", "--json").stdout)
    assert {(s["service"], s["status"], s["error"]) for s in status["services"]} == {
        (service, "ok", None) for service in ("selector", "learner", "indexer")
    }
    table = run_cli(endpoints, "analytics", "metrics")
    assert table.returncode == 0, table.stderr
    assert "latency_p50_ms" in table.stdout
    assert "{" not in table.stdout
    assert "selections" in json.loads(run_cli(endpoints, "analytics", "metrics", "--format", "json").stdout)


def test_admin_writes_confirm_in_one_line_or_print_json(endpoints: Endpoints, tmp_path: Path) -> None:
    plugin, tenant = _synced(endpoints, tmp_path)
    mapping = (plugin, "/outbox*", "general")
    created = run_cli(endpoints, "admin", "page-mappings", "create", *mapping, "--priority", "5")
    assert created.stdout == f"mapped pages /outbox* to {plugin}'s category general (priority 5)\n", created.stderr
    deleted = json.loads(run_cli(endpoints, "admin", "page-mappings", "delete", *mapping, "--json").stdout)
    assert (deleted["plugin_id"], deleted["page_pattern"]) == (plugin, "/outbox*")

    target = f"{plugin}/get_weather"
    rule = ("--type", "tier", "--effect", "deny", "--target-kind", "tool", "--tenant", tenant)
    done = run_cli(endpoints, "admin", "rules", "create", target, *rule, "--conditions", '{"tier": {"lt": "pro"}}')
    line = r"rule (\d+) created: deny tool (\S+) for tenant (\S+) when (.+) \(tier rule, priority 0\)\n"
    confirmed = re.fullmatch(line, done.stdout)
    assert confirmed, done.stdout + done.stderr
    rule_id, named, for_tenant, when = confirmed.groups()
    assert (named, for_tenant, json.loads(when)) == (target, tenant, {"tier": {"lt": "pro"}})
    updated = run_cli(endpoints, "admin", "rules", "update", rule_id, "--no-active", "--format", "json")
    paused = json.loads(updated.stdout)
    assert (paused["id"], paused["active"]) == (int(rule_id), False)
    assert paused["conditions"] == {"tier": {"lt": "pro"}}  # an update keeps what it does not name
    gone = run_cli(endpoints, "admin", "rules", "delete", rule_id)
    assert gone.stdout.startswith(f"rule {rule_id} deleted: deny tool {target} for tenant {tenant} when")


def test_select_takes_every_request_field_and_says_why_pins_exceed_k(endpoints: Endpoints, tmp_path: Path) -> None:
    plugin, tenant = _synced(endpoints, tmp_path, pinned=True, pin_weight=10)
    args = ("select", "send an email to bob", "--tenant", tenant, "--user", "u1", "--role", "admin", "--session", "s1",
            "--seed", "3", "--retrieval", "bm25", "--plugin", plugin, "--dry-run")  # fmt: skip
    reply = json.loads(run_cli(endpoints, *args, "--k", "1", "--json").stdout)
    assert {t["name"]: t["pinned"] for t in reply["tools"]} == {"send_email": False, "get_weather": True}
    table = " ".join(run_cli(endpoints, *args, "--k", "1").stdout.split())  # the caption wraps at the table's width
    assert "2 tools: 1 pinned on top of the k=1 asked for" in table
    unranked = json.loads(run_cli(endpoints, *args, "--k", "1", "--no-rerank", "--json").stdout)
    assert [t["name"] for t in unranked["tools"]] == ["send_email"]
