"""`toolsel tools` against the running test stack: list, versions, rollback, drift, typed errors."""

import json

from tests.integration.catalog import plugin_sync, run_cli, tool, unique
from toolsel.client import ToolselClient
from toolsel.stack import Endpoints


async def test_tools_commands(endpoints: Endpoints, client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("cli-tools")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather", description="Radar."), tool("send_email")]))

    listed = run_cli(endpoints, "tools", "list", "--plugin", plugin, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == ["get_weather", "send_email"]

    history = run_cli(endpoints, "tools", "versions", plugin, "get_weather")
    assert history.returncode == 0, history.stderr
    assert "Radar." in history.stdout
    assert "description" in history.stdout

    rolled = run_cli(endpoints, "tools", "rollback", plugin, "get_weather", "1")
    assert rolled.returncode == 0, rolled.stderr
    assert "restored v1 as v3" in rolled.stdout

    drift = run_cli(endpoints, "tools", "drift", "--plugin", plugin, "--json")
    assert json.loads(drift.stdout)["tools"] == []
    said = run_cli(endpoints, "tools", "drift", "--plugin", plugin)
    assert f"nothing drifted: every embedding of {plugin}'s tools is current" in said.stdout

    missing = run_cli(endpoints, "tools", "show", plugin, "nothing_here")
    assert missing.returncode == 1
    assert "not_found" in missing.stderr
