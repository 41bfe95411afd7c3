"""`toolsel tools` against the running test stack: list, versions, rollback, drift, typed errors."""

import json
import os
import subprocess
import sys

from tests.integration.catalog import plugin_sync, tool, unique
from toolsel.client import ToolselClient
from toolsel.stack import Endpoints


def _tools(endpoints: Endpoints, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TOOLSEL_NATS_URL": endpoints.nats_url,
        "TOOLSEL_DATABASE_URL": endpoints.database_url,
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "toolsel.cli", "tools", *args], env=env, capture_output=True, text=True, timeout=60
    )


async def test_tools_commands(endpoints: Endpoints, client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("cli-tools")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather", description="Radar."), tool("send_email")]))

    listed = _tools(endpoints, "list", "--plugin", plugin, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == ["get_weather", "send_email"]

    history = _tools(endpoints, "versions", plugin, "get_weather")
    assert history.returncode == 0, history.stderr
    assert "Radar." in history.stdout
    assert "description" in history.stdout

    rolled = _tools(endpoints, "rollback", plugin, "get_weather", "1")
    assert rolled.returncode == 0, rolled.stderr
    assert "restored v1 as v3" in rolled.stdout

    drift = _tools(endpoints, "drift", "--plugin", plugin, "--json")
    assert json.loads(drift.stdout)["tools"] == []

    missing = _tools(endpoints, "show", plugin, "nothing_here")
    assert missing.returncode == 1
    assert "not_found" in missing.stdout
