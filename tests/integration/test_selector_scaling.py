"""Selectors scale out by running more copies: they share the select subject through a queue group."""

import asyncio
import time
from pathlib import Path

from tests.integration.catalog import TOOLS, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.stack import Stack


def _starts(log: Path) -> int:
    """How many times the service writing ``log`` has reported it started."""
    return log.read_text().count("started successfully") if log.exists() else 0


async def _wait_for_start(log: Path, before: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while await asyncio.to_thread(_starts, log) <= before:
        assert time.monotonic() < deadline, f"no start in {log}"
        await asyncio.sleep(0.1)


async def test_a_second_selector_answers_when_the_first_stops(client: ToolselClient, stack: Stack) -> None:
    tenant = unique("tenant")
    await sync_and_wait(client, plugin_sync(unique("scale"), tenant, [tool(n) for n in TOOLS]))
    logs = stack.settings.home / "logs"
    second = stack.spawn("selector", log_name="selector-2")
    try:
        await _wait_for_start(logs / "selector-2.log", 0)
        first = stack.services["selector"]
        first.terminate()
        first.wait(30)
        for _ in range(20):
            reply = await client.select(query="email the report to my boss", tenant_id=tenant, k=2, dry_run=True)
            assert reply.tools[0].name == "send_email"
    finally:
        if stack.services["selector"].poll() is not None:  # put the stack back as the other tests expect it
            before = await asyncio.to_thread(_starts, logs / "selector.log")
            stack.services["selector"] = stack.spawn("selector")
            await _wait_for_start(logs / "selector.log", before)
        second.terminate()
        second.wait(30)
    answered = await client.select(query="weather in Oslo", tenant_id=tenant, k=1, dry_run=True)
    assert answered.tools[0].name == "get_weather"
