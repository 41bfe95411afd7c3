"""Durable JetStream consumers, one per event kind: validate, apply in a batch, acknowledge after commit.

An event kind is a row of the handlers' table (``handlers.EVENT_KINDS``): its subject, its model, the function
that applies a batch of it, and what to say when it refers to something not stored yet. What is done with a
message is the same for every kind, here:

- malformed: dead-lettered with the validation error, acknowledged;
- the batch failed: negatively acknowledged, redelivered in a second;
- refers to something not stored (yet): redelivered with backoff (events may arrive out of order), then
  dead-lettered once older than ``orphan_timeout_s`` or delivered ``max_deliver`` times;
- applied (or a duplicate): acknowledged, after the batch's transaction committed.
"""

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from faststream.middlewares import AckPolicy
from faststream.nats import NatsRouter
from faststream.nats.annotations import NatsMessage
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig
from pydantic import BaseModel, ValidationError

from contracts import subjects
from services.learner.batcher import Batcher
from services.learner.state import Applied, LearnerState
from toolsel.messaging import dead_letter, events_stream

log = logging.getLogger("toolsel.learner")
E = TypeVar("E", bound=BaseModel)
MAX_BACKOFF_S = 5.0
FAILED_BATCH_DELAY_S = 1.0


@dataclass(frozen=True)
class EventKind(Generic[E]):
    name: str
    """Names its durable consumer (``toolsel-learner-<name>``) and its dead letters (``toolsel.dlq.<name>``)."""
    subject: str
    model: type[E]
    apply: Callable[[LearnerState, Sequence[E]], Awaitable[list[Applied]]]
    """Apply a batch in one transaction; one verdict per event, in order."""
    missing: Callable[[E], str]
    """What an event refers to that is not stored (yet): the dead-letter reason once retrying gives up."""


def batchers(state: LearnerState, kinds: Iterable[EventKind[Any]]) -> dict[str, Batcher[Any, Applied]]:
    """One batcher per kind, applying with the state's store."""
    size, wait = state.settings.learner_batch_size, state.settings.learner_batch_timeout_s
    return {kind.name: Batcher(functools.partial(kind.apply, state), max_size=size, max_wait_s=wait) for kind in kinds}


def backoff_s(delivered: int) -> float:
    """How long a redelivery of an event that came too early waits: doubling, at most ``MAX_BACKOFF_S``."""
    return min(0.05 * 2.0**delivered, MAX_BACKOFF_S)


async def _dead_letter(state: LearnerState, kind: str, msg: Msg, reason: str) -> None:
    await dead_letter(state.broker, kind, msg.data, reason)
    state.counters.dead_letters += 1
    await msg.ack()


async def _retry_or_dead_letter(state: LearnerState, kind: str, msg: Msg, reason: str) -> None:
    """Out of order is normal (try again shortly); forever is not: dead-letter once the event is older than
    ``orphan_timeout_s``, or delivered ``max_deliver`` times."""
    meta = msg.metadata
    age_s = time.time() - meta.timestamp.timestamp() if meta.timestamp else 0.0
    if age_s >= state.settings.orphan_timeout_s or meta.num_delivered >= state.settings.max_deliver:
        await _dead_letter(state, kind, msg, reason)
    else:
        await msg.nak(delay=backoff_s(meta.num_delivered))


async def consume(state: LearnerState, kind: EventKind[E], msg: Msg) -> None:
    """Validate, apply in a batch, then acknowledge: after commit, never before; a bad event is kept aside."""
    try:
        event = kind.model.model_validate_json(msg.data)
    except ValidationError as invalid:
        await _dead_letter(state, kind.name, msg, f"malformed: {invalid.errors()[0]['msg']}")
        return
    try:
        applied = await state.batchers[kind.name].submit(event)
    except Exception:
        log.exception("%s batch failed; redelivering", kind.name)
        await msg.nak(delay=FAILED_BATCH_DELAY_S)
        return
    if applied == "unknown":
        await _retry_or_dead_letter(state, kind.name, msg, kind.missing(event))
    else:
        await msg.ack()


def router(state: LearnerState, kinds: Iterable[EventKind[Any]]) -> NatsRouter:
    """A durable consumer per kind (a queue group per durable: learners share the work)."""
    events, stream = NatsRouter(), events_stream()
    settings = state.settings
    for kind in kinds:
        durable = f"{subjects.LEARNER_DURABLE_PREFIX}-{kind.name}"
        subscriber = events.subscriber(
            kind.subject,
            stream=stream,
            durable=durable,
            queue=durable,
            max_workers=settings.learner_batch_size,
            config=ConsumerConfig(
                ack_wait=settings.learner_ack_wait_s, max_ack_pending=4 * settings.learner_batch_size
            ),
            ack_policy=AckPolicy.MANUAL,
            title=f"{kind.name}-events",
            description=(
                f"{kind.name.capitalize()} events ({kind.subject}): applied in batches, acknowledged after commit."
            ),
        )
        subscriber(_handler(state, kind))
    return events


def _handler(state: LearnerState, kind: EventKind[Any]) -> Callable[[NatsMessage], Awaitable[None]]:
    async def handle(msg: NatsMessage) -> None:
        await consume(state, kind, msg.raw_message)

    handle.__name__ = f"on_{kind.name}"
    return handle
