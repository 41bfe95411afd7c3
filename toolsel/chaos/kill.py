"""Kill: a part of the stack SIGKILLed ``kills`` times while ``outcomes`` outcomes stream in, and brought back by the
stack's own supervision each time (the harness restarts nothing). The part is the learner, the NATS server or the
PostgreSQL server. Then every outcome JetStream acknowledged must be stored once, and counted once in the tool's
calls and posterior; and each time, how long the part took to serve again is measured."""

import asyncio
import logging
import os
import signal
import time
from typing import Any, Literal
from uuid import UUID

from toolsel.chaos.figures import delivery_figures
from toolsel.chaos.stage import Stage, durable, selection_of
from toolsel.contracts import OutcomeEvent, ToolCall, subjects
from toolsel.settings import Settings
from toolsel.store import answers, catalog, events, readmodels
from toolsel.waiting import eventually

Target = Literal["learner", "nats", "postgres"]
NAME = "create_event"
SETTLE_S = 600.0
RESTART_S = 120.0
"""How long the supervisor may take to bring a part back before the scenario gives up."""
PROBE_S = 2.0
POOL_LOG = logging.getLogger("asyncpg.pool")
"""Logs each failed reconnect of the harness's pool with its traceback: expected while PostgreSQL is away."""


async def _calls(stage: Stage, plugin: str) -> int:
    """Calls counted for the tool so far; -1 while PostgreSQL does not answer."""
    try:
        return sum(int(row["calls"]) for row in await readmodels.tool_health(stage.pool, plugin, NAME))
    except Exception:  # PostgreSQL is away (the postgres kill): not counted yet
        return -1


async def _serves(stage: Stage, target: Target) -> bool:
    """Whether ``target`` serves again: the learner or every service answers its health request (over NATS), or
    PostgreSQL answers a query."""
    try:
        if target == "postgres":
            assert stage.stack.endpoints is not None
            await answers(stage.stack.endpoints.database_url, PROBE_S)
        else:
            for service in (target,) if target == "learner" else subjects.SERVICES:
                await stage.client.health(service)
    except Exception:
        return False
    return True


def _pid(stage: Stage, target: Target) -> int:
    if target == "learner":
        return stage.stack.services["learner"].pid
    pid = stage.stack.servers()[target].pid
    if pid is None:
        raise RuntimeError(f"{target} does not run")
    return pid


async def _kill_and_time(stage: Stage, target: Target) -> float:
    """SIGKILL ``target``; seconds until the supervisor has started it again and it serves."""
    before = stage.stack.supervision[target].restarts
    os.kill(_pid(stage, target), signal.SIGKILL)
    killed = time.monotonic()

    async def back() -> bool:
        return stage.stack.supervision[target].restarts > before and await _serves(stage, target)

    if not await eventually(back, timeout_s=RESTART_S, every_s=0.05):
        raise RuntimeError(f"{target} was not restarted within {RESTART_S} s")
    return round(time.monotonic() - killed, 2)


async def _stored_selections(stage: Stage, ids: list[UUID]) -> bool:
    return len(await events.selection_keys(stage.pool, ids)) == len(ids)


async def kill(stage: Stage, target: Target, kills: int, outcomes: int) -> dict[str, Any]:
    tenant, plugin = stage.name(f"kill-{target}"), stage.name(f"kill-{target}")
    await stage.sync_catalog(tenant, plugin, (NAME,))
    selections = [selection_of(tenant, plugin, NAME) for _ in range(outcomes)]
    await stage.publish(subjects.SELECTION_EVENTS, [s.model_dump_json().encode() for s in selections])
    ids = [s.selection_id for s in selections]
    if not await eventually(lambda: _stored_selections(stage, ids), timeout_s=SETTLE_S, every_s=0.5):
        raise RuntimeError("the selections the outcomes refer to were not stored")
    sent = [OutcomeEvent(selection_id=s, calls=[ToolCall(plugin_id=plugin, name=NAME, success=True)]) for s in ids]
    started = time.monotonic()
    publishing = asyncio.create_task(
        stage.publish(subjects.OUTCOME_EVENTS, [e.model_dump_json().encode() for e in sent])
    )
    at_kill: list[int] = []
    back_s: list[float] = []
    POOL_LOG.setLevel(logging.CRITICAL)
    for n in range(1, kills + 1):
        threshold = n * outcomes // (kills + 1)

        async def reached(threshold: int = threshold) -> bool:
            return await _calls(stage, plugin) >= threshold

        await eventually(reached, timeout_s=SETTLE_S, every_s=0.05)
        at_kill.append(await _calls(stage, plugin))
        back_s.append(await _kill_and_time(stage, target))
    await publishing
    POOL_LOG.setLevel(logging.NOTSET)
    stuck = await stage.settle(durable("outcome"), SETTLE_S)
    rows = await readmodels.event_rows(stage.pool, "outcomes", None, None, None)
    mine = {str(e.event_id) for e in sent}
    stored = [r["event_id"] for r in rows if r["event_id"] in mine]
    posterior = [
        r["alpha"]
        for r in await catalog.posteriors(stage.pool)
        if r["key"] == f"{plugin}/{NAME}" and r["tenant_id"] == tenant
    ]
    settings = Settings()
    return {
        "target": target,
        "kills": kills,
        "kills_mid_stream": sum(1 for applied in at_kill if applied < outcomes),
        "applied_at_each_kill": at_kill,
        "back_s": back_s,
        "back_max_s": max(back_s),
        "seconds": round(time.monotonic() - started, 1),
        "stuck": stuck,
        **delivery_figures(
            list(mine),
            stored,
            await _calls(stage, plugin),
            posterior[0] if posterior else settings.prior_alpha,
            settings.prior_alpha,
        ),
    }
