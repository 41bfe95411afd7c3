"""NATS restart: agents select without pause while the NATS server is stopped and started again under the
services. Every selection an agent was answered must reach the learner's store: the selector keeps selection
events in its outbox while NATS is away and publishes them when it is back."""

import asyncio
import logging
import time
from typing import Any
from uuid import UUID

from toolsel.chaos.stage import QUERIES, TOOLS, Stage
from toolsel.client import ToolselClient
from toolsel.store import events
from toolsel.waiting import eventually

AGENTS = 8
"""Agents selecting at once."""
STORE_S = 120.0
"""How long the answered selections may take to reach the store."""
BACK_S = 120.0
NATS_LOG = logging.getLogger("nats.aio.client")
"""Logs every failed reconnect with its traceback: expected here, so kept quiet while NATS is away."""


async def nats_restart(stage: Stage, selections: int) -> dict[str, Any]:
    """``selections`` answered selections in all, NATS restarted once half of them are in."""
    nats = stage.stack.nats
    if nats is None:
        raise RuntimeError("the NATS restart needs the stack's own NATS server")
    tenant = stage.name("restart")
    await stage.sync_catalog(tenant, tenant)
    answered: list[UUID] = []
    refused = 0
    enough = asyncio.Event()
    url = stage.identity(tenant)

    async def agent(number: int) -> None:
        nonlocal refused
        async with ToolselClient(url, timeout_s=5) as mine:
            turn = number
            while not enough.is_set():
                turn += 1
                try:
                    reply = await mine.select(query=QUERIES[turn % len(TOOLS)], k=2)
                except Exception:  # NATS is away: no answer, so no selection the agent knows of
                    refused += 1
                    await asyncio.sleep(0.05)
                else:
                    answered.append(reply.selection_id)
                    if len(answered) >= selections:
                        enough.set()

    async def at_least(n: int) -> bool:
        return len(answered) >= n

    started = time.monotonic()
    agents = [asyncio.create_task(agent(n)) for n in range(AGENTS)]
    try:
        await eventually(lambda: at_least(selections // 2), timeout_s=BACK_S)
        before = len(answered)
        level = NATS_LOG.level
        NATS_LOG.setLevel(logging.CRITICAL)
        try:
            await asyncio.to_thread(nats.restart)
            if not await eventually(lambda: at_least(before + AGENTS), timeout_s=BACK_S):
                raise RuntimeError("no selection answered after the restart")
        finally:
            NATS_LOG.setLevel(level)
        if not await eventually(lambda: at_least(selections), timeout_s=BACK_S):
            raise RuntimeError(f"{len(answered)} of {selections} selections answered: the selector did not come back")
    finally:
        enough.set()
        await asyncio.gather(*agents, return_exceptions=True)

    async def stored() -> int:
        return len(await events.selection_keys(stage.pool, answered))

    async def all_stored() -> bool:
        return await stored() == len(answered)

    await eventually(all_stored, timeout_s=STORE_S, every_s=0.5)
    health = await stage.client.health("selector")
    kept = await stored()
    return {
        "answered": len(answered),
        "answered_before_restart": before,
        "unanswered_attempts": refused,
        "stored": kept,
        "lost": len(answered) - kept,
        "selector_dropped": health.details.get("selection_events_dropped"),
        "seconds": round(time.monotonic() - started, 1),
    }
