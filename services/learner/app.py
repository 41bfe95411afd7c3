"""The learner app: durable, batched JetStream consumers of selection, outcome, review and feedback events."""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import asyncpg
import numpy as np
import numpy.typing as npt
from faststream.middlewares import AckPolicy
from faststream.nats.annotations import NatsMessage
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig
from pydantic import BaseModel, ValidationError

from contracts import (
    FeedbackEvent,
    OutcomeEvent,
    PosteriorsUpdated,
    QuarantineRelease,
    ReviewEvent,
    SelectionEvent,
    ToolStateChanged,
    subjects,
)
from services.learner.batcher import Batcher
from services.learner.degradation import Policy
from services.learner.feedback import apply_feedback
from services.learner.fitness import Multipliers
from services.learner.quarantine import ReleaseRefused, release_due, release_tool
from services.learner.reviews import apply_reviews
from services.learner.store import apply_outcomes, store_selections
from toolsel.embedder import Embedder
from toolsel.messaging import (
    RequestError,
    add_health,
    check_admin,
    dead_letter,
    events_stream,
)
from toolsel.service import load_model, make_service, open_store
from toolsel.settings import get_settings

log = logging.getLogger("toolsel.learner")
settings = get_settings()
service = make_service(
    "learner",
    (
        "Outcomes, reviews and feedback become Beta posteriors, quality, tool health and the review index;"
        " every event applied once."
    ),
    settings,
)
broker, rpc, asyncapi, app = service.broker, service.rpc, service.asyncapi, service.app
EVENTS = events_stream()
posteriors = broker.publisher(subjects.POSTERIORS_UPDATED, title="posteriors-updated", schema=PosteriorsUpdated)
tool_states = broker.publisher(
    subjects.TOOL_STATE_CHANGED,
    title="tool-state",
    schema=ToolStateChanged,
    description="A tool's health changed (warning, degraded, quarantined, probation, healthy): selectors reload.",
)
policy = Policy.from_settings(settings)
multipliers = Multipliers.from_settings(settings)
state: dict[str, Any] = {
    "applied": 0,
    "duplicates": 0,
    "dead_letters": 0,
    "reviews": 0,
    "feedback": 0,
    "transitions": 0,
}
Verdict = Literal["applied", "unknown"]
E = TypeVar("E", bound=BaseModel)


def _pool() -> asyncpg.Pool:
    pool: asyncpg.Pool = state["pool"]
    return pool


async def _retry_or_dead_letter(kind: str, msg: Msg, reason: str) -> None:
    """Out of order is normal (try again shortly); forever is not: dead-letter once the event is older than
    ``orphan_timeout_s``, or delivered ``max_deliver`` times."""
    meta = msg.metadata
    age_s = time.time() - meta.timestamp.timestamp() if meta.timestamp else 0.0
    if age_s >= settings.orphan_timeout_s or meta.num_delivered >= settings.max_deliver:
        await dead_letter(broker, kind, msg.data, reason)
        state["dead_letters"] += 1
        await msg.ack()
    else:
        await msg.nak(delay=min(0.05 * 2**meta.num_delivered, 5.0))


async def _apply_selections(events: Sequence[SelectionEvent]) -> list[Verdict]:
    await store_selections(_pool(), events)
    return ["applied"] * len(events)


async def _apply_outcomes(events: Sequence[OutcomeEvent]) -> list[Verdict]:
    result = await apply_outcomes(
        _pool(), events, settings.prior_alpha, settings.prior_beta, settings.not_called_penalty, policy
    )
    state["applied"] += len(result.applied)
    state["duplicates"] += len(result.duplicates)
    if result.posteriors:
        await posteriors.publish(PosteriorsUpdated(updates=result.posteriors))
    await _announce(result.transitions)
    unknown = set(result.unknown_selection)
    return ["unknown" if e.event_id in unknown else "applied" for e in events]


async def _announce(changes: Sequence[ToolStateChanged]) -> None:
    """Tell the selectors (they reload and drop a quarantined tool at once) and the logs."""
    for change in changes:
        log.warning("tool %s is %s: %s", change.key, change.state.value, change.reason)
        await tool_states.publish(change)
    state["transitions"] += len(changes)


async def _embedder() -> Embedder:
    """Loaded on the first review (outcomes and feedback need no model), once."""
    async with state.setdefault("embedder_lock", asyncio.Lock()):
        if "embedder" not in state:
            state["embedder"] = await load_model(settings)
    embedder: Embedder = state["embedder"]
    return embedder


async def _embed(queries: Sequence[str]) -> npt.NDArray[np.float32]:
    embedder = await _embedder()
    return await asyncio.to_thread(lambda: np.vstack([embedder.embed_query(q) for q in queries]))


async def _apply_reviews(events: Sequence[ReviewEvent]) -> list[Verdict]:
    result = await apply_reviews(_pool(), events, _embed, multipliers, settings.review_merge_similarity)
    state["reviews"] += len(result.applied)
    state["duplicates"] += len(result.duplicates)
    unknown = set(result.unknown_selection)
    return ["unknown" if e.event_id in unknown else "applied" for e in events]


async def _apply_feedback(events: Sequence[FeedbackEvent]) -> list[Verdict]:
    result = await apply_feedback(_pool(), events)
    state["feedback"] += len(result.applied)
    state["duplicates"] += len(result.duplicates)
    unknown = set(result.unknown_tool)
    return ["unknown" if e.event_id in unknown else "applied" for e in events]


def _batcher(apply: Callable[[Sequence[E]], Awaitable[list[Verdict]]]) -> Batcher[E, Verdict]:
    return Batcher(apply, max_size=settings.learner_batch_size, max_wait_s=settings.learner_batch_timeout_s)


selection_batches = _batcher(_apply_selections)
outcome_batches = _batcher(_apply_outcomes)
review_batches = _batcher(_apply_reviews)
feedback_batches = _batcher(_apply_feedback)


def _unknown(event: BaseModel) -> str:
    """What an event refers to that is not stored (yet): its selection, or for feedback its tool."""
    if isinstance(event, FeedbackEvent):
        return f"unknown tool {event.key}"
    return f"unknown selection {getattr(event, 'selection_id', '')}"


async def _consume(kind: str, msg: Msg, model: type[E], batches: Batcher[E, Verdict]) -> None:
    """Validate, apply in a batch, then acknowledge: after commit, never before; a bad event is kept aside."""
    try:
        event = model.model_validate_json(msg.data)
    except ValidationError as invalid:
        await dead_letter(broker, kind, msg.data, f"malformed: {invalid.errors()[0]['msg']}")
        state["dead_letters"] += 1
        await msg.ack()
        return
    try:
        verdict = await batches.submit(event)
    except Exception:
        log.exception("%s batch failed; redelivering", kind)
        await msg.nak(delay=1.0)
        return
    if verdict == "unknown":
        await _retry_or_dead_letter(kind, msg, _unknown(event))
    else:
        await msg.ack()


def _consumer(subject: str, name: str) -> Callable[[Callable[[NatsMessage], Awaitable[None]]], Any]:
    durable = f"{subjects.LEARNER_DURABLE_PREFIX}-{name}"
    return broker.subscriber(
        subject,
        stream=EVENTS,
        durable=durable,
        queue=durable,
        max_workers=settings.learner_batch_size,
        config=ConsumerConfig(ack_wait=settings.learner_ack_wait_s, max_ack_pending=4 * settings.learner_batch_size),
        ack_policy=AckPolicy.MANUAL,
        title=f"{name}-events",
        description=f"{name.capitalize()} events ({subject}): applied in batches, acknowledged after commit.",
    )


@_consumer(subjects.SELECTION_EVENTS, "selection")
async def on_selection(msg: NatsMessage) -> None:
    await _consume("selection", msg.raw_message, SelectionEvent, selection_batches)


@_consumer(subjects.OUTCOME_EVENTS, "outcome")
async def on_outcome(msg: NatsMessage) -> None:
    await _consume("outcome", msg.raw_message, OutcomeEvent, outcome_batches)


@_consumer(subjects.REVIEW_EVENTS, "review")
async def on_review(msg: NatsMessage) -> None:
    await _consume("review", msg.raw_message, ReviewEvent, review_batches)


@_consumer(subjects.FEEDBACK_EVENTS, "feedback")
async def on_feedback(msg: NatsMessage) -> None:
    await _consume("feedback", msg.raw_message, FeedbackEvent, feedback_batches)


@rpc.subscriber(subjects.ADMIN_QUARANTINE_RELEASE, queue="toolsel-learner-admin", title="quarantine-release")
async def on_release(request: QuarantineRelease) -> ToolStateChanged:
    """An operator puts a quarantined tool on probation; the selectors take it back at once."""
    check_admin(request.admin_token, settings.admin_token)
    try:
        change = await release_tool(_pool(), request.plugin_id, request.name, request.released_by)
    except ReleaseRefused as refused:
        raise RequestError(refused.code, str(refused), "name") from refused
    await _announce([change])
    return change


async def _release_when_due() -> None:
    """Quarantine is not forever: after ``quarantine_release_after_s`` a tool goes on probation."""
    while True:
        await asyncio.sleep(settings.quarantine_check_interval_s)
        try:
            await _announce(await release_due(_pool(), settings.quarantine_release_after_s))
        except Exception:
            log.exception("timed quarantine release failed; trying again later")


add_health(rpc, "learner", lambda: {k: v for k, v in state.items() if isinstance(v, int)})
broker.include_router(rpc)


@app.on_startup
async def _start() -> None:
    state["pool"] = await open_store(settings)
    if settings.quarantine_release_after_s > 0:
        state["release_timer"] = asyncio.get_running_loop().create_task(_release_when_due())


@app.on_shutdown
async def _stop() -> None:
    timer: asyncio.Task[None] | None = state.get("release_timer")
    if timer is not None:
        timer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await timer
    await _pool().close()
