"""Selection events outlive a NATS restart: the selector keeps them in a bounded outbox and publishes them
once the server is back, so every answered selection reaches the stream (and its outcomes find it)."""

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from uuid import UUID

import pytest

from tests.conftest import running_stack
from tests.integration.catalog import (
    TOOLS,
    eventually,
    plugin_sync,
    stored_selections,
    sync_and_wait,
    tool,
    unique,
)
from toolsel import identities
from toolsel.client import ToolselClient
from toolsel.outbox import Outbox
from toolsel.stack import Stack

CLIENTS = 8
"""Agents selecting at once while NATS restarts."""


@pytest.fixture(scope="module")
def own_stack() -> Iterator[Stack]:
    """Its own stack: this test restarts NATS under it."""
    yield from running_stack()


async def test_no_selection_event_is_lost_when_nats_restarts(own_stack: Stack) -> None:
    assert own_stack.endpoints is not None
    assert own_stack.nats is not None
    url = own_stack.endpoints.nats_url
    tenant = unique("tenant")
    answered: list[UUID] = []
    stopping = asyncio.Event()
    async with ToolselClient(url, timeout_s=5) as client:
        await sync_and_wait(client, plugin_sync(unique("mail"), tenant, [tool(n) for n in TOOLS]))

        agent_url = identities.create(own_stack.settings.home, tenant, "agent").nats_url(own_stack.nats.url)

        async def agent() -> None:
            async with ToolselClient(agent_url, timeout_s=5) as mine:
                while not stopping.is_set():
                    try:
                        reply = await mine.select(query="email the report to my boss", k=2)
                    except Exception:  # NATS is away: no answer, so no selection the agent knows of
                        await asyncio.sleep(0.05)
                    else:
                        answered.append(reply.selection_id)

        def at_least(n: int) -> Callable[[], Awaitable[bool]]:
            async def probe() -> bool:
                return len(answered) >= n

            return probe

        agents = [asyncio.create_task(agent()) for _ in range(CLIENTS)]
        try:
            assert await eventually(at_least(200), timeout_s=60)
            await asyncio.to_thread(own_stack.nats.restart)
            restarted_at = len(answered)
            assert await eventually(at_least(restarted_at + 200), timeout_s=60), "no answers after the restart"
        finally:
            stopping.set()
            await asyncio.gather(*agents)

    async def all_stored() -> bool:
        return set(answered) <= await stored_selections(url, tenant)

    assert await eventually(all_stored, timeout_s=30), (
        f"{len(set(answered) - await stored_selections(url, tenant))} lost"
    )
    async with ToolselClient(url) as client:
        health = await client.health("selector")
    assert health.details["selection_events_dropped"] == 0


class FlakyStream:
    """A publish that fails while ``down`` and records what it stored, in order."""

    def __init__(self) -> None:
        self.down = False
        self.stored: list[int] = []

    async def publish(self, event: int) -> None:
        await asyncio.sleep(0)
        if self.down:
            raise ConnectionError("NATS is away")
        self.stored.append(event)


async def test_the_outbox_keeps_order_through_failures_and_counts_what_it_drops() -> None:
    stream = FlakyStream()
    outbox: Outbox[int] = Outbox(stream.publish, capacity=5, batch=2, retry_max_s=0.05)
    outbox.start()
    stream.down = True
    for event in range(7):
        outbox.put(event)
    assert outbox.dropped == 2
    await asyncio.sleep(0.1)  # some attempts fail meanwhile
    assert stream.stored == []
    stream.down = False
    await outbox.close(timeout_s=10)
    assert stream.stored == [0, 1, 2, 3, 4]
    assert (outbox.published, outbox.dropped, len(outbox.queue)) == (5, 2, 0)


async def test_a_batch_still_publishing_when_the_outbox_closes_counts_as_dropped() -> None:
    async def hangs(event: int) -> None:
        await asyncio.Event().wait()

    outbox: Outbox[int] = Outbox(hangs, capacity=10, batch=4, retry_max_s=0.01)
    outbox.start()
    for event in range(3):
        outbox.put(event)
    await outbox.close(timeout_s=0.05)
    assert (outbox.published, outbox.dropped, len(outbox.queue)) == (0, 3, 0)


async def test_what_a_closing_outbox_cannot_publish_counts_as_dropped() -> None:
    stream = FlakyStream()
    stream.down = True
    outbox: Outbox[int] = Outbox(stream.publish, capacity=10, batch=4, retry_max_s=0.01)
    outbox.start()
    for event in range(3):
        outbox.put(event)
    await outbox.close(timeout_s=0.1)
    assert (outbox.published, outbox.dropped, len(outbox.queue)) == (0, 3, 0)
