"""The learner app: durable, batched JetStream consumers of selection, outcome, review and feedback events, and
the admin areas whose tables it owns (learning, analytics)."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from faststream import FastStream

from toolsel.contracts import PosteriorsUpdated, ToolStateChanged, subjects
from toolsel.heap import freeze_start_up_heap
from toolsel.messaging import add_health, rpc_router
from toolsel.runtime import every, open_store, service_app, service_broker
from toolsel.services.learner import consumers, retention
from toolsel.services.learner.admin import analytics, learning
from toolsel.services.learner.broadcast import announce
from toolsel.services.learner.handlers import EVENT_KINDS
from toolsel.services.learner.quarantine import release_due
from toolsel.services.learner.state import LearnerState
from toolsel.settings import Settings

log = logging.getLogger("toolsel.learner")
DESCRIPTION = (
    "Outcomes, reviews and feedback become Beta posteriors, quality, tool health and the review index;"
    " every event applied once."
)


async def release_due_tools(state: LearnerState) -> None:
    """Quarantine is not forever: after ``quarantine_release_after_s`` (longer for a tool that keeps failing on
    probation) a tool goes on probation."""
    settings = state.settings
    released = await release_due(
        state.pool, settings.quarantine_release_after_s, settings.quarantine_release_max_s, state.policy
    )
    await announce(state, released)


def create_app(settings: Settings) -> FastStream:
    """The learner for these settings; the store opens (and the release timer starts) when the app starts."""
    broker = service_broker(settings, "learner")
    state = LearnerState.from_settings(
        settings,
        broker,
        posteriors=broker.publisher(subjects.POSTERIORS_UPDATED, title="posteriors-updated", schema=PosteriorsUpdated),
        tool_states=broker.publisher(
            subjects.TOOL_STATE_CHANGED,
            title="tool-state",
            schema=ToolStateChanged,
            description=(
                "A tool's health changed (warning, degraded, quarantined, probation, healthy): selectors reload."
            ),
        ),
    )
    state.batchers = consumers.batchers(state, EVENT_KINDS)
    state.marks = consumers.marks(EVENT_KINDS)
    broker.include_router(consumers.router(state, EVENT_KINDS))
    rpc = rpc_router()
    rpc.include_router(learning.router(state))
    rpc.include_router(analytics.router(state))
    add_health(rpc, "learner", state.counters.details)
    broker.include_router(rpc)

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        state.store = await open_store(settings)
        await consumers.refit(settings, EVENT_KINDS)
        timers = []
        if settings.quarantine_release_after_s > 0:
            release = every(
                settings.quarantine_check_interval_s, lambda: release_due_tools(state), log, "timed quarantine release"
            )
            timers.append(asyncio.get_running_loop().create_task(release))
        if retention.prunes(settings):
            prune = every(
                settings.retention_interval_s,
                lambda: retention.prune_logged(state.pool, settings),
                log,
                "dropping what is past keeping",
            )
            timers.append(asyncio.get_running_loop().create_task(prune))
        freeze_start_up_heap()
        try:
            yield
        finally:
            for timer in timers:
                timer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await timer
            await state.pool.close()

    return service_app(broker, "learner", DESCRIPTION, lifespan)
