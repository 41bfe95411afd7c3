"""The learner app: durable, batched JetStream consumers of selection and outcome events."""

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

import asyncpg
from faststream import Context, FastStream
from faststream.middlewares import AckPolicy
from faststream.nats import PullSub
from faststream.nats.message import NatsBatchMessage
from faststream.specification import AsyncAPI
from nats.aio.msg import Msg
from pydantic import BaseModel, ValidationError

from contracts import OutcomeEvent, PosteriorsUpdated, SelectionEvent, subjects
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
Batch = Annotated[NatsBatchMessage, Context("message")]
E = TypeVar("E", bound=BaseModel)


def _pool() -> asyncpg.Pool:
    pool: asyncpg.Pool = state["pool"]
    return pool


async def _parse(kind: str, raw: Sequence[Msg], model: type[E]) -> list[tuple[Msg, E]]:
    """Valid events with their messages; a malformed one goes to the dead-letter stream and is acked."""
    parsed = []
    for msg in raw:
        try:
            parsed.append((msg, model.model_validate_json(msg.data)))
        except ValidationError as invalid:
            await dead_letter(broker, kind, msg.data, f"malformed: {invalid.errors()[0]['msg']}")
            state["dead_letters"] += 1
            await msg.ack()
    return parsed


async def _retry_or_dead_letter(kind: str, msg: Msg, reason: str) -> None:
    """Out of order is normal (try again shortly); forever is not (dead-letter after max deliveries)."""
    if msg.metadata.num_delivered >= settings.max_deliver:
        await dead_letter(broker, kind, msg.data, reason)
        state["dead_letters"] += 1
        await msg.ack()
    else:
        await msg.nak(delay=0.2 * msg.metadata.num_delivered)


def _consumer(subject: str, name: str) -> Callable[[Callable[[Batch], Awaitable[None]]], Any]:
    return broker.subscriber(
        subject,
        stream=EVENTS,
        durable=f"{subjects.LEARNER_DURABLE_PREFIX}-{name}",
        pull_sub=PullSub(batch_size=settings.learner_batch_size, timeout=settings.learner_batch_timeout_s, batch=True),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        title=f"{name}-events",
        description=f"{name.capitalize()} events ({subject}), applied in batches and acked after commit.",
    )


@_consumer(subjects.SELECTION_EVENTS, "selection")
async def on_selections(batch: Batch) -> None:
    parsed = await _parse("selection", batch.raw_message, SelectionEvent)
    await store_selections(_pool(), [event for _, event in parsed])


@_consumer(subjects.OUTCOME_EVENTS, "outcome")
async def on_outcomes(batch: Batch) -> None:
    parsed = await _parse("outcome", batch.raw_message, OutcomeEvent)
    result = await apply_outcomes(
        _pool(), [event for _, event in parsed], settings.prior_alpha, settings.prior_beta, settings.not_called_penalty
    )
    state["applied"] += len(result.applied)
    state["duplicates"] += len(result.duplicates)
    unknown = set(result.unknown_selection)
    for msg, event in parsed:
        if event.event_id in unknown:
            await _retry_or_dead_letter("outcome", msg, f"unknown selection {event.selection_id}")
    if result.posteriors:
        await posteriors.publish(PosteriorsUpdated(updates=result.posteriors))


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
