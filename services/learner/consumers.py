"""Durable JetStream consumers, one per event kind: validate, apply in a batch, acknowledge after commit.

An event kind is a row of the handlers' table (``handlers.EVENT_KINDS``): its subject, its model, the function
that applies a batch of it, and what to say when it refers to something not stored yet. What is done with a
message is the same for every kind, here:

- malformed (deep JSON too): dead-lettered with the validation error at once, acknowledged;
- the batch failed for want of a server: every event negatively acknowledged, redelivered in a second;
- the batch failed otherwise: split until the failing events stand alone, the others applied; a failing
  event is redelivered, then dead-lettered with the error once delivered ``Settings.poison_attempts`` times;
- refers to something not stored (yet): redelivered with backoff (events may arrive out of order), then
  dead-lettered once past its deadline (older than ``orphan_timeout_s``, or delivered ``max_deliver`` times)
  and, for an outcome or review, once the selection consumer has applied every selection stored by then: a
  learner that was down or is behind may hold the selection in that consumer's backlog for longer
  (``EventKind.awaits``). A last attempt may still find it applied meanwhile (by a redelivered copy in a
  concurrent batch): that is a duplicate. JetStream itself drops none (the consumers set no ``max_deliver``).
  While it waits it holds one of the consumer's slots, which every tenant shares: past
  ``Settings.orphans_per_sender_max`` of one sender's it is dead-lettered at once (``may_wait``);
- applied (or a duplicate): acknowledged, after the batch's transaction committed;
- while its batch is still being applied (a large one embeds its queries first), the event tells the server
  it is in progress every half ack-wait, so that a slow batch is not redelivered and applied again.
"""

import functools
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import nats.errors
from faststream.exceptions import IncorrectState
from faststream.middlewares import AckPolicy
from faststream.nats import NatsRouter
from faststream.nats.annotations import NatsMessage
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, ConsumerInfo
from nats.js.errors import NotFoundError
from pydantic import BaseModel, ValidationError

from toolsel.batching import Batcher
from toolsel.contracts import subjects
from toolsel.contracts.events import Sent
from toolsel.contracts.identity import Scope
from toolsel.messaging import (
    RequestError,
    backlog,
    dead_letter,
    events_stream,
    failure,
    gives_up,
    in_progress_while,
    refit_consumers,
    transient,
    undecoded,
)
from toolsel.runtime import nats_url
from toolsel.services.learner.state import Applied, LearnerState, Marks
from toolsel.settings import Settings
from toolsel.tenancy import sender, tenant_for

log = logging.getLogger("toolsel.learner")
E = TypeVar("E", bound=BaseModel)
MAX_BACKOFF_S = 5.0


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
    scoped: bool = False
    """Sent by clients on ``subject``'s scopes (``toolsel.contracts.subjects.scoped``): who sent each event is read from
    its subject, and the tenant it names must be the sender's."""
    awaits: str | None = None
    """The kind whose events store what this kind's refer to (an outcome's selection): one referring to nothing
    stored is given up only once that kind's consumer has applied every event stored by its deadline. None: at its
    deadline."""

    @property
    def filter(self) -> str:
        """The subject its durable consumer reads."""
        return subjects.any_scope(self.subject) if self.scoped else self.subject


def marks(kinds: Iterable[EventKind[Any]]) -> dict[str, Marks]:
    """Marks for each kind another waits for (``EventKind.awaits``), kept as its events are delivered."""
    return {kind.awaits: Marks() for kind in kinds if kind.awaits}


def batchers(state: LearnerState, kinds: Iterable[EventKind[Any]]) -> dict[str, Batcher[Any, Applied]]:
    """One batcher per kind, applying with the state's store."""
    s = state.settings
    return {
        kind.name: Batcher(
            functools.partial(kind.apply, state),
            max_size=s.learner_batch_size,
            max_wait_s=s.learner_batch_timeout_s,
            max_in_flight=s.learner_batches_in_flight,
            isolate=_suspect,
        )
        for kind in kinds
    }


def _suspect(error: Exception) -> bool:
    return not transient(error)


def backoff_s(delivered: int) -> float:
    """How long a redelivery of an event that came too early waits: doubling, at most ``MAX_BACKOFF_S``."""
    return min(0.05 * 2.0**delivered, MAX_BACKOFF_S)


async def _dead_letter(state: LearnerState, kind: str, msg: Msg, reason: str) -> None:
    await dead_letter(state.broker, kind, msg.data, reason)
    state.counters.dead_letters += 1
    await msg.ack()


def deadline(meta: Msg.Metadata, settings: Settings, now: float) -> float | None:
    """When an event referring to something not stored stops waiting for it: ``orphan_timeout_s`` after it was
    stored, or now once delivered ``max_deliver`` times; None while it waits on (out of order is normal)."""
    stored_at = meta.timestamp.timestamp() if meta.timestamp else now
    if now - stored_at >= settings.orphan_timeout_s:
        return stored_at + settings.orphan_timeout_s
    return now if meta.num_delivered >= settings.max_deliver else None


def applied_through(info: ConsumerInfo, mark: int | None) -> bool:
    """Whether a consumer has applied every event before the stream sequence ``mark``: it has none left to deliver
    or to see acknowledged, or all are acknowledged up to ``mark`` (None: unknown, so not)."""
    if not backlog(info):
        return True
    floor = int(info.ack_floor.stream_seq or 0) if info.ack_floor else 0
    return mark is not None and floor >= mark


async def _applied_by(state: LearnerState, kind: str, moment: float) -> bool:
    """Whether ``kind``'s consumer has applied every event stored by ``moment``; not while that cannot be told."""
    try:
        info = await state.broker.connection.jetstream().consumer_info(
            subjects.EVENTS_STREAM, subjects.learner_durable(kind)
        )
    except NotFoundError:  # no consumer of that kind: nothing is coming
        return True
    except (nats.errors.Error, OSError, IncorrectState) as error:
        log.warning("cannot tell whether %s events are pending (%s); waiting on", kind, error)
        return False
    kept = state.marks.get(kind)
    return applied_through(info, kept.after(moment) if kept else None)


async def _gone(state: LearnerState, kind: EventKind[Any], msg: Msg) -> bool:
    """Whether what an event refers to can no longer arrive: the event is past its ``deadline``, and the consumer
    of the kind it waits for (if any) has applied every event stored by then."""
    due = deadline(msg.metadata, state.settings, time.time())
    if due is None:
        return False
    return kind.awaits is None or await _applied_by(state, kind.awaits, due)


def _mark(state: LearnerState, kind: EventKind[Any], msg: Msg) -> None:
    """Keep where the stream stood when this event was stored, if another kind waits for this one."""
    kept, meta = state.marks.get(kind.name), msg.metadata
    if kept is not None and meta.timestamp is not None:
        kept.saw(meta.timestamp.timestamp(), meta.sequence.stream)


async def consume(state: LearnerState, kind: EventKind[E], msg: Msg) -> None:
    """Validate, apply in a batch, then acknowledge: after commit, never before; a bad event is kept aside."""
    _mark(state, kind, msg)
    try:
        event = kind.model.model_validate_json(msg.data)
        if kind.scoped:
            event = admitted(event, sender(msg.subject, kind.subject))
    except ValidationError as invalid:
        await _dead_letter(state, kind.name, msg, f"malformed: {invalid.errors()[0]['msg']}")
        return
    except RequestError as refused:
        await _dead_letter(state, kind.name, msg, refused.detail.message)
        return
    batcher = state.batchers[kind.name]
    every_s = state.settings.learner_ack_wait_s / 2
    try:
        applied = await in_progress_while(msg, batcher.enqueue(event), every_s)
        gone = applied == "unknown" and await _gone(state, kind, msg)
        if gone:  # a last attempt: a fresh transaction sees what concurrent ones committed
            applied = await in_progress_while(msg, batcher.enqueue(event), every_s)
    except Exception as error:
        await _failed(state, kind.name, msg, error)
        return
    waiter = (kind.name, event.sender.token if isinstance(event, Sent) else subjects.OPERATOR_SCOPE)
    if applied == "unknown" and not gone and await may_wait(state, kind, msg, waiter):
        await msg.nak(delay=backoff_s(msg.metadata.num_delivered))
        return
    state.waiting.release(waiter, msg.metadata.sequence.stream)
    if applied == "applied":
        await msg.ack()
    elif gone:
        await _dead_letter(state, kind.name, msg, kind.missing(event))
    else:
        crowded = f"too many of this sender's events ({state.waiting.limit}) wait for what they refer to"
        await _dead_letter(state, kind.name, msg, f"{kind.missing(event)}; {crowded}")


async def may_wait(state: LearnerState, kind: EventKind[Any], msg: Msg, waiter: tuple[str, str]) -> bool:
    """Whether an event referring to nothing stored (yet) may wait on, holding one of the consumer's slots: while
    its sender (``waiter``: kind and sender) holds fewer than ``orphans_per_sender_max`` such events, or while what
    it waits for may still be in its consumer's backlog (``awaits``: a learner catching up holds many of every
    sender's events, rightly). Past that it is dead-lettered at once: 9,000 outcomes of made-up selections from
    one tenant held a victim's outcome 49.9 s. A legitimate agent never holds so many: its outcome trails its
    selection event by milliseconds (the selector publishes that as it answers, the agent reports once it has
    called the tools), so what waits of it is its last few outcomes, for as long as the selection consumer takes
    to store their selections."""
    meta, now = msg.metadata, time.time()
    if state.waiting.hold(waiter, meta.sequence.stream, now):
        return True
    stored_at = meta.timestamp.timestamp() if meta.timestamp else now
    return kind.awaits is not None and not await _applied_by(state, kind.awaits, stored_at)


def admitted(event: E, scope: Scope) -> E:
    """The event as sent by ``scope``, acting for the sender's tenant (``tenant_for``: a tenant's identity that
    names another tenant is refused)."""
    if isinstance(event, Sent):
        event = event.sent_by(scope)
    claimed = getattr(event, "tenant_id", None)
    if claimed is not None:
        tenant = tenant_for(scope, claimed, "tenant_id" in event.model_fields_set)
        if tenant != claimed:
            event = event.model_copy(update={"tenant_id": tenant})
    return event


async def _failed(state: LearnerState, kind: str, msg: Msg, error: Exception) -> None:
    """Redeliver an event whose batch failed for want of a server, or that failed alone (for now); dead-letter
    one that keeps failing alone."""
    delivered = msg.metadata.num_delivered
    if gives_up(error, delivered, state.settings.poison_attempts):
        await _dead_letter(state, kind, msg, failure(error))
        return
    log.warning("%s event failed (delivery %d), redelivering: %s: %s", kind, delivered, type(error).__name__, error)
    await msg.nak(delay=state.settings.failed_event_delay_s)


DURABLE_PUSH_WARNING = "The JetStream Push consumer with the `durable` option"
"""FastStream's warning that a durable push consumer cannot scale out: ours has a queue group of the durable's
name, so every learner takes its share of the events (silenced where the consumers are made)."""


def in_hand(settings: Settings) -> int:
    """Events a learner's consumer may hold unacknowledged: four batches, each in a handler telling the server it
    is in progress."""
    return 4 * settings.learner_batch_size


async def refit(settings: Settings, kinds: Iterable[EventKind[Any]]) -> list[str]:
    """The durable consumers of ``kinds``, where they exist, set as ``router`` makes them (``refit_consumers``)."""
    durables = [subjects.learner_durable(kind.name) for kind in kinds]
    return await refit_consumers(nats_url(settings), durables, settings.learner_ack_wait_s, in_hand(settings))


def router(state: LearnerState, kinds: Iterable[EventKind[Any]]) -> NatsRouter:
    """A durable consumer per kind (a queue group per durable: learners share the work). Every event the server
    has delivered and awaits the acknowledgement of is in a handler, which tells the server it is in progress: with
    fewer handlers than that, the rest waited in FastStream's queue unheard of, were delivered again past their
    ack-wait, and their growing delivery counts dead-lettered them early."""
    events, stream = NatsRouter(), events_stream()
    settings = state.settings
    warnings.filterwarnings("ignore", message=DURABLE_PUSH_WARNING, category=RuntimeWarning)
    in_flight = in_hand(settings)
    for kind in kinds:
        subscriber = events.subscriber(
            kind.filter,
            stream=stream,
            durable=subjects.learner_durable(kind.name),
            queue=subjects.learner_durable(kind.name),
            max_workers=in_flight,
            config=ConsumerConfig(ack_wait=settings.learner_ack_wait_s, max_ack_pending=in_flight),
            ack_policy=AckPolicy.MANUAL,
            decoder=undecoded,
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
