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
from toolsel.runtime import open_store, service_app, service_broker
from toolsel.services.learner import consumers
from toolsel.services.learner.admin import analytics, learning
from toolsel.services.learner.broadcast import announce
from toolsel.services.learner.handlers import EVENT_KINDS
from toolsel.services.learner.quarantine import release_due
from toolsel.services.learner.state import LearnerState
from toolsel.settings import Settings
from toolsel.store.learning import prune_credits

log = logging.getLogger("toolsel.learner")
DESCRIPTION = (
    "Outcomes, reviews and feedback become Beta posteriors, quality, tool health and the review index;"
    " every event applied once."
)


async def release_when_due(state: LearnerState) -> None:
    """Quarantine is not forever: after ``quarantine_release_after_s`` (longer for a tool that keeps failing on
    probation) a tool goes on probation."""
    while True:
        await asyncio.sleep(state.settings.quarantine_check_interval_s)
        try:
            settings = state.settings
            released = await release_due(
                state.pool, settings.quarantine_release_after_s, settings.quarantine_release_max_s, state.policy
            )
            await announce(state, released)
        except Exception:
            log.exception("timed quarantine release failed; trying again later")


CREDITS_PRUNE_EVERY_S = 3600.0
"""How often a learner drops the credits rows no actor will spend again (``prune_credits``)."""


async def prune_when_due(state: LearnerState) -> None:
    """Credits refill with each window of an actor's selections, so a row untouched for two windows is never spent
    again: dropped, or the tables kept a row for every anonymous call and every day of every actor, for good."""
    while True:
        await asyncio.sleep(CREDITS_PRUNE_EVERY_S)
        try:
            dropped = await prune_credits(state.pool, 2 * state.settings.learning_credits_window_s)
            if dropped:
                log.info("dropped %d credits rows of past windows", dropped)
        except Exception:
            log.exception("dropping past credits failed; trying again later")


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
            timers.append(asyncio.get_running_loop().create_task(release_when_due(state)))
        if settings.learning_credits_window_s > 0:
            timers.append(asyncio.get_running_loop().create_task(prune_when_due(state)))
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
