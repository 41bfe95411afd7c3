"""Kill: the learner SIGKILLed ``kills`` times while ``outcomes`` outcomes stream in; the supervisor restarts it
each time. Then every sent outcome must be stored once, and counted once in the tool's calls and posterior."""

import asyncio
import os
import signal
import time
from typing import Any
from uuid import UUID

from contracts import OutcomeEvent, ToolCall, subjects
from toolsel.chaos.figures import delivery_figures
from toolsel.chaos.stage import Stage, durable, eventually, selection_of
from toolsel.settings import Settings
from toolsel.store import catalog, events, readmodels

NAME = "create_event"
SETTLE_S = 600.0
RESTART_S = 120.0
"""How long the supervisor may take to bring the learner back."""


async def _calls(stage: Stage, plugin: str) -> int:
    return sum(int(row["calls"]) for row in await readmodels.tool_health(stage.pool, plugin, NAME))


async def _kill_learner(stage: Stage) -> None:
    """SIGKILL the learner and wait until the supervisor has started another one that answers."""
    before = stage.restarts()
    process = stage.stack.services["learner"]
    os.kill(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.wait)

    async def back() -> bool:
        if stage.restarts() == before:
            return False
        try:
            await stage.client.health("learner")
        except Exception:
            return False
        return True

    if not await eventually(back, timeout_s=RESTART_S, every_s=0.2):
        raise RuntimeError(f"the learner was not restarted within {RESTART_S} s")


async def _stored_selections(stage: Stage, ids: list[UUID]) -> bool:
    return len(await events.selection_keys(stage.pool, ids)) == len(ids)


async def kill(stage: Stage, kills: int, outcomes: int) -> dict[str, Any]:
    tenant, plugin = stage.name("kill"), stage.name("kill")
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
    for n in range(1, kills + 1):
        threshold = n * outcomes // (kills + 1)

        async def reached(threshold: int = threshold) -> bool:
            return await _calls(stage, plugin) >= threshold

        await eventually(reached, timeout_s=SETTLE_S, every_s=0.05)
        at_kill.append(await _calls(stage, plugin))
        await _kill_learner(stage)
    await publishing
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
        "kills": kills,
        "kills_mid_stream": sum(1 for applied in at_kill if applied < outcomes),
        "applied_at_each_kill": at_kill,
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
