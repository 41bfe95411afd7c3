"""The learner app: durable, batched JetStream consumers of selection and outcome events."""

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import asyncpg
from faststream import FastStream
from faststream.middlewares import AckPolicy
from faststream.nats.annotations import NatsMessage
from faststream.specification import AsyncAPI
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig
from pydantic import BaseModel, ValidationError

from contracts import OutcomeEvent, PosteriorsUpdated, SelectionEvent, subjects
from services.learner.batcher import Batcher
from services.learner.store import apply_outcomes, store_selections
from toolsel import __version__
from toolsel.messaging import add_health, dead_letter, ensure_streams, events_stream, make_broker, rpc_router
from toolsel.settings import get_settings

log = logging.getLogger("toolsel.learner")
settings = get_settings()
broker_url = settings.nats_url or "nats://127.0.0.1:4222"
broker = make_broker(broker_url, "learner")
rpc = rpc_router()
asyncapi = AsyncAPI(
    broker,
    title="toolsel learner",
    version=__version__,
    description="Outcomes become Beta posteriors and quality; every event applied once.",
)
app = FastStream(broker, specification=asyncapi)
EVENTS = events_stream()
posteriors = broker.publisher(subjects.POSTERIORS_UPDATED, title="posteriors-updated", schema=PosteriorsUpdated)
state: dict[str, Any] = {"applied": 0, "duplicates": 0, "dead_letters": 0}
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
        _pool(), events, settings.prior_alpha, settings.prior_beta, settings.not_called_penalty
    )
    state["applied"] += len(result.applied)
    state["duplicates"] += len(result.duplicates)
    if result.posteriors:
        await posteriors.publish(PosteriorsUpdated(updates=result.posteriors))
    unknown = set(result.unknown_selection)
    return ["unknown" if e.event_id in unknown else "applied" for e in events]


def _batcher(apply: Callable[[Sequence[E]], Awaitable[list[Verdict]]]) -> Batcher[E, Verdict]:
    return Batcher(apply, max_size=settings.learner_batch_size, max_wait_s=settings.learner_batch_timeout_s)


selection_batches = _batcher(_apply_selections)
outcome_batches = _batcher(_apply_outcomes)


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
        await _retry_or_dead_letter(kind, msg, f"unknown selection {getattr(event, 'selection_id', '')}")
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


add_health(rpc, "learner", lambda: {k: v for k, v in state.items() if isinstance(v, int)})
broker.include_router(rpc)


@app.on_startup
async def _start() -> None:
    from toolsel.db import create_pool

    if not settings.database_url:
        raise RuntimeError("TOOLSEL_DATABASE_URL is not set")
    await ensure_streams(broker_url)
    state["pool"] = await create_pool(settings.database_url)


@app.on_shutdown
async def _stop() -> None:
    await _pool().close()
