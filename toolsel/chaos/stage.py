"""What every scenario works on: the stack it may kill parts of, an operator's client, the database, and a small
catalog synced per tenant; plus the waits they share (for a condition, for a consumer to settle)."""

import asyncio
import time
from dataclasses import dataclass
from typing import TypeVar

import asyncpg
import nats.errors

from toolsel import identities
from toolsel.client import ToolselClient
from toolsel.contracts import (
    DEFAULT_TIER,
    CategorySpec,
    PluginSync,
    SelectedTool,
    SelectionEvent,
    SelectReply,
    ToolSpec,
    subjects,
)
from toolsel.messaging import consumer_backlog, consumer_settled
from toolsel.stack import Stack
from toolsel.waiting import eventually

T = TypeVar("T")

TOOLS = {
    "get_weather": ("Current weather and forecast for a city.", "what's the weather in Paris"),
    "send_email": ("Send an email message to one or more recipients.", "email my boss the quarterly report"),
    "search_flights": ("Search for flights between two airports on a date.", "find a flight from Berlin to Rome"),
    "translate_text": ("Translate text between languages.", "translate this sentence into Spanish"),
    "create_event": ("Create a calendar event with a time and attendees.", "schedule a meeting tomorrow at 3pm"),
}
"""The small catalog each scenario syncs for its own tenant: name -> (description, an example query)."""
QUERIES = tuple(example for _, example in TOOLS.values())
CATEGORY = "general"
LEARNER_KINDS = ("selection", "outcome", "review", "feedback")
PUBLISH_CHUNK = 200
"""Events published before waiting for their acknowledgements."""
REPUBLISH_S = 120.0
"""How long an event is published again while it gets no acknowledgement."""


def durable(kind: str) -> str:
    """The consumer of an event kind."""
    return subjects.INDEXER_DURABLE if kind == "sync" else subjects.learner_durable(kind)


def selection_of(tenant: str, plugin: str, name: str) -> SelectionEvent:
    """A selection that offered one tool, with no session or user: its own actor (see the learner's credits)."""
    return SelectionEvent(
        tenant_id=tenant,
        query=TOOLS[name][1],
        tier=DEFAULT_TIER,
        context_key=f"{DEFAULT_TIER}::general",
        method="hybrid",
        tools=[SelectedTool(plugin_id=plugin, name=name, rank=0, score=0.5)],
        candidate_count=1,
        latency_ms=1.0,
        tokens_selected=1,
        tokens_catalog=1,
    )


@dataclass
class Stage:
    stack: Stack
    client: ToolselClient
    """As the NATS operator, with the admin token."""
    pool: asyncpg.Pool
    seed: int
    run: str
    """Unique per run: tenants and plugins are named after it."""

    def name(self, what: str) -> str:
        return f"chaos-{self.run}-{what}"

    def identity(self, tenant: str, name: str = "agent") -> str:
        """The NATS URL of a new identity of ``tenant`` (the stack's NATS admits it at once)."""
        if self.stack.nats is None:
            raise RuntimeError("identities need the stack's own NATS server")
        return identities.create(self.stack.settings.home, tenant, name).nats_url(self.stack.nats.url)

    def restarts(self) -> int:
        """Services the supervisor has restarted so far."""
        return sum(s.restarts for s in self.stack.supervision.values())

    async def publish(self, subject: str, bodies: list[bytes]) -> None:
        """Publish into the events stream, ``PUBLISH_CHUNK`` at a time, each acknowledged (so stored): one that
        gets no acknowledgement (NATS is away) is published again until it does, as an agent's runtime would (a
        repeat changes nothing: the learner applies an event id once)."""
        js = self.client.nc.jetstream()

        async def acknowledged(body: bytes) -> None:
            deadline = time.monotonic() + REPUBLISH_S
            while True:
                try:
                    await js.publish(subject, body)
                    return
                except (nats.errors.Error, TimeoutError):
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.1)

        for start in range(0, len(bodies), PUBLISH_CHUNK):
            await asyncio.gather(*(acknowledged(body) for body in bodies[start : start + PUBLISH_CHUNK]))

    async def sync_catalog(
        self, tenant: str, plugin: str, names: tuple[str, ...] = tuple(TOOLS), select_as: str | None = None
    ) -> None:
        """Sync ``names`` of the catalog as ``plugin`` of ``tenant`` and wait until the selectors show them (to
        ``select_as``: a shared catalog's tenant ``*`` cannot select)."""
        tools = [
            ToolSpec(name=n, description=TOOLS[n][0], example_queries=[TOOLS[n][1]], category=CATEGORY) for n in names
        ]
        sync = PluginSync(
            plugin_id=plugin,
            plugin_version="1.0.0",
            tenant_id=tenant,
            tools=tools,
            categories=[CategorySpec(name=CATEGORY)],
        )
        await self.client.sync(sync)

        async def visible() -> bool:
            reply = await self.dry_run(select_as or tenant, "anything", plugins=[plugin])
            return {t.name for t in reply.tools} == set(names)

        if not await eventually(visible, timeout_s=60):
            raise RuntimeError(f"the selectors did not show {plugin} within 60 s")

    async def dry_run(self, tenant: str, query: str, plugins: list[str] | None = None) -> SelectReply:
        """A seeded selection that records nothing: the same question gets the same answer unless learning moved."""
        filters = {"plugins": plugins} if plugins else {}
        return await self.client.select(
            query=query, tenant_id=tenant, k=10, dry_run=True, seed=self.seed, filters=filters
        )

    async def settle(self, durable: str, timeout_s: float) -> int:
        """Wait until ``durable`` has settled (``consumer_settled``) or the timeout; what it still has pending
        then: stuck."""

        async def settled() -> bool:
            return await consumer_settled(self.client.nc, durable)

        await eventually(settled, timeout_s)
        return await consumer_backlog(self.client.nc, durable)
