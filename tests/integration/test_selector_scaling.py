"""Selectors scale out by running more copies: they share the select subject through a queue group."""

import asyncio
import signal
import time
from pathlib import Path
from uuid import UUID

from tests.integration.catalog import (
    TOOLS,
    eventually,
    plugin_sync,
    stored_selections,
    sync_and_wait,
    tool,
    unique,
)
from toolsel.client import ToolselClient
from toolsel.stack import Endpoints, Stack


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


AGENTS = 8
"""Agents selecting at once while a selector stops."""


async def test_a_selector_stopped_while_answering_publishes_every_selection_it_answered(
    client: ToolselClient, stack: Stack, endpoints: Endpoints
) -> None:
    """A rolling restart's SIGTERM closed the selection outbox before the select subscriber stopped: the selects
    answered in between never reached the stream, and their outcomes were dead-lettered as orphans."""
    tenant = unique("tenant")
    await sync_and_wait(client, plugin_sync(unique("stop"), tenant, [tool(n) for n in TOOLS]))
    logs = stack.settings.home / "logs"
    second = stack.spawn("selector", log_name="selector-stopping")
    answered: list[UUID] = []
    stopping = asyncio.Event()

    async def agent() -> None:
        while not stopping.is_set():
            try:
                reply = await client.select(query="email the report to my boss", tenant_id=tenant, k=2)
            except Exception:  # no answer: no selection the agent knows of
                await asyncio.sleep(0.05)
            else:
                answered.append(reply.selection_id)

    try:
        await _wait_for_start(logs / "selector-stopping.log", 0)
        agents = [asyncio.create_task(agent()) for _ in range(AGENTS)]
        await asyncio.sleep(2)
        second.send_signal(signal.SIGTERM)
        await asyncio.to_thread(second.wait, 60)
        await asyncio.sleep(1)
        stopping.set()
        await asyncio.gather(*agents)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(30)
    assert answered

    async def all_stored() -> bool:
        return set(answered) <= await stored_selections(endpoints.nats_url, tenant)

    lost = set(answered) - await stored_selections(endpoints.nats_url, tenant)
    assert await eventually(all_stored, timeout_s=30), f"{len(lost)} of {len(answered)} answered selections lost"
