"""What a learner consumer does with each message, in memory (FastStream's TestNatsBroker): acknowledge after the
batch applied, redeliver a batch that failed for want of a server, split one that failed otherwise so only the
culprit is kept back and then dead-lettered, dead-letter what is malformed or refers to nothing for too long."""

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import numpy as np
import pytest
from faststream.nats import JStream, NatsBroker, TestNatsBroker
from faststream.nats.annotations import NatsMessage
from faststream.nats.testing import PatchedMessage
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, ConsumerInfo, SequenceInfo

from toolsel import messaging
from toolsel.contracts import FeedbackEvent, OutcomeEvent, subjects
from toolsel.contracts.identity import OPERATOR, tenant_scope
from toolsel.messaging import RequestError
from toolsel.services.learner import consumers
from toolsel.services.learner.consumers import EventKind, admitted, applied_through, deadline
from toolsel.services.learner.state import MARK_EVERY_S, Applied, LearnerState, Marks, Waiting
from toolsel.services.learner.usage import Embed, embedded
from toolsel.settings import Settings

Log = list[tuple[str, Any]]


@dataclass
class Harness:
    """A broker with one outcome consumer whose batches are applied by ``verdicts`` in turn (the last one
    stays), or fail with ``error``: every batch, or those holding a ``poison`` selection."""

    broker: NatsBroker
    state: LearnerState
    log: Log
    verdicts: list[Applied] = field(default_factory=lambda: ["applied"])
    error: Exception | None = None
    slow_s: float = 0.0
    poison: set[UUID] = field(default_factory=set)
    dead_letters: list[tuple[bytes, str]] = field(default_factory=list)
    embed: Embed | None = None
    """Embeds a query per event first, as applying outcomes does (``usage.embedded``)."""

    async def apply(self, state: LearnerState, batch: Sequence[OutcomeEvent]) -> list[Applied]:
        self.log.append(("apply", len(batch)))
        await asyncio.sleep(self.slow_s)
        if self.embed is not None:
            await embedded(self.embed, [str(e.selection_id) for e in batch])
        if self.error is not None and (not self.poison or any(e.selection_id in self.poison for e in batch)):
            raise self.error
        verdict = self.verdicts.pop(0) if len(self.verdicts) > 1 else self.verdicts[0]
        return [verdict] * len(batch)

    async def publish(self, body: bytes, delivered: int = 1, age_s: float = 0.0, sequence: int = 1) -> None:
        """As JetStream delivers: the ack subject carries the delivery count, the event's stream sequence and the
        time it was stored."""
        stored_ns = int((time.time() - age_s) * 1e9)
        ack = f"$JS.ACK.{subjects.EVENTS_STREAM}.toolsel-learner-outcome.{delivered}.{sequence}.1.{stored_ns}.0"
        await self.broker.publish(body, subjects.OUTCOME_EVENTS, stream=subjects.EVENTS_STREAM, reply_to=ack)


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Log:
    """Every ack and nak of an in-memory event message, in order, with what the batches did."""
    calls: Log = []

    async def ack(self: PatchedMessage) -> None:
        if self.subject == subjects.OUTCOME_EVENTS:
            calls.append(("ack", None))

    async def nak(self: PatchedMessage, delay: float | None = None) -> None:
        if self.subject == subjects.OUTCOME_EVENTS:
            calls.append(("nak", delay))

    async def in_progress(self: PatchedMessage) -> None:
        if self.subject == subjects.OUTCOME_EVENTS:
            calls.append(("in_progress", None))

    monkeypatch.setattr(PatchedMessage, "ack", ack)
    monkeypatch.setattr(PatchedMessage, "nak", nak)
    monkeypatch.setattr(PatchedMessage, "in_progress", in_progress)
    return calls


@pytest.fixture
async def harness(log: Log) -> AsyncIterator[Harness]:
    settings = Settings(
        home=Path(tempfile.mkdtemp(prefix="toolsel-unit-")),
        learner_batch_size=3,
        learner_batch_timeout_s=0.25,  # concurrent publishes land in one batch even on a busy machine
        orphan_timeout_s=60,
        max_deliver=4,
    )
    broker = NatsBroker()
    state = LearnerState.from_settings(
        settings, broker, broker.publisher(subjects.POSTERIORS_UPDATED), broker.publisher(subjects.TOOL_STATE_CHANGED)
    )
    harness = Harness(broker, state, log)
    kinds = [
        EventKind("outcome", subjects.OUTCOME_EVENTS, OutcomeEvent, harness.apply, lambda e: f"no {e.selection_id}")
    ]
    state.batchers = consumers.batchers(state, kinds)
    broker.include_router(consumers.router(state, kinds))

    @broker.subscriber(
        subjects.dead_letter("outcome"), stream=JStream(subjects.DLQ_STREAM, declare=False), decoder=messaging.undecoded
    )
    async def dead_letter(msg: NatsMessage) -> None:
        harness.dead_letters.append((msg.body, msg.headers["toolsel-reason"]))

    async with TestNatsBroker(broker):
        yield harness


def _outcome() -> OutcomeEvent:
    return OutcomeEvent(selection_id=uuid4())


async def test_an_event_is_acknowledged_after_its_batch_applied(harness: Harness) -> None:
    await harness.publish(_outcome().model_dump_json().encode())
    assert harness.log == [("apply", 1), ("ack", None)]
    assert harness.dead_letters == []


async def test_a_slow_batch_keeps_its_events_in_progress_until_it_commits(harness: Harness) -> None:
    harness.state.settings = harness.state.settings.model_copy(update={"learner_ack_wait_s": 0.2})
    harness.slow_s = 0.35  # the heartbeat comes every half ack-wait: 0.1 s
    await harness.publish(_outcome().model_dump_json().encode())
    applied = harness.log.index(("apply", 1))
    assert harness.log[-1] == ("ack", None)
    assert harness.log[applied + 1 : -1].count(("in_progress", None)) >= 2  # while the batch was applied
    assert set(harness.log[:-1]) == {("apply", 1), ("in_progress", None)}


async def test_concurrent_events_are_applied_in_one_batch_then_each_acknowledged(harness: Harness) -> None:
    await asyncio.gather(*(harness.publish(_outcome().model_dump_json().encode()) for _ in range(3)))
    assert harness.log == [("apply", 3), ("ack", None), ("ack", None), ("ack", None)]


async def test_a_failed_batch_is_redelivered_not_acknowledged(harness: Harness) -> None:
    harness.error = RuntimeError("database went away")
    await harness.publish(_outcome().model_dump_json().encode())
    assert harness.log == [("apply", 1), ("nak", Settings().failed_event_delay_s)]
    assert harness.dead_letters == []


async def test_a_malformed_event_is_dead_lettered_with_the_reason_and_acknowledged(harness: Harness) -> None:
    await harness.publish(b'{"selection_id": "not a uuid"}')
    assert harness.log == [("ack", None)]
    ((body, reason),) = harness.dead_letters
    assert body == b'{"selection_id": "not a uuid"}'
    assert reason.startswith("malformed: ")
    assert harness.state.counters.dead_letters == 1


async def test_an_event_of_an_unknown_selection_is_retried_with_backoff(harness: Harness) -> None:
    harness.verdicts = ["unknown"]
    await harness.publish(_outcome().model_dump_json().encode(), delivered=2)
    assert harness.log == [("apply", 1), ("nak", consumers.backoff_s(2))]
    assert consumers.backoff_s(2) == pytest.approx(0.2)
    assert consumers.backoff_s(50) == consumers.MAX_BACKOFF_S
    assert harness.dead_letters == []


@pytest.mark.parametrize(("delivered", "age_s"), [(4, 0.0), (1, 61.0)])
async def test_an_event_of_an_unknown_selection_is_dead_lettered_at_last(
    harness: Harness, delivered: int, age_s: float
) -> None:
    """After ``max_deliver`` deliveries, or once older than ``orphan_timeout_s`` (and a last attempt)."""
    harness.verdicts = ["unknown"]
    event = _outcome()
    await harness.publish(event.model_dump_json().encode(), delivered=delivered, age_s=age_s)
    assert harness.log == [("apply", 1), ("apply", 1), ("ack", None)]
    assert [reason for _, reason in harness.dead_letters] == [f"no {event.selection_id}"]
    assert harness.state.counters.dead_letters == 1


async def test_past_its_senders_bound_of_waiting_events_an_orphan_is_dead_lettered_at_once(harness: Harness) -> None:
    """Each held one takes a slot of the consumer every tenant shares; one held already waits on, and one applied
    makes room."""
    harness.state.waiting.limit = 2
    harness.verdicts = ["unknown"]
    events = [_outcome() for _ in range(3)]
    for sequence, event in enumerate(events, start=1):
        await harness.publish(event.model_dump_json().encode(), sequence=sequence)
    await harness.publish(events[0].model_dump_json().encode(), delivered=2, sequence=1)  # held: waits on
    assert [entry for entry in harness.log if entry[0] != "apply"] == [
        ("nak", consumers.backoff_s(1)),
        ("nak", consumers.backoff_s(1)),
        ("ack", None),
        ("nak", consumers.backoff_s(2)),
    ]
    crowded = f"no {events[2].selection_id}; too many of this sender's events (2) wait for what they refer to"
    assert [reason for _, reason in harness.dead_letters] == [crowded]
    harness.verdicts = ["applied"]
    await harness.publish(events[1].model_dump_json().encode(), delivered=2, sequence=2)
    harness.verdicts = ["unknown"]
    await harness.publish(_outcome().model_dump_json().encode(), sequence=4)
    assert harness.log[-2:] == [("apply", 1), ("nak", consumers.backoff_s(1))]
    assert len(harness.dead_letters) == 1


def test_a_sender_holds_its_bound_of_waiting_events_and_forgets_those_no_delivery_refreshed() -> None:
    waiting, acme, globex = Waiting(limit=2, ttl_s=10.0), ("outcome", "t.acme.a"), ("outcome", "t.globex.g")
    assert waiting.hold(acme, 1, 0.0)
    assert waiting.hold(acme, 2, 5.0)
    assert not waiting.hold(acme, 3, 6.0)
    assert waiting.hold(globex, 3, 6.0)  # another sender's events wait as ever
    assert waiting.hold(acme, 1, 9.0)  # held already: refreshed
    assert waiting.hold(acme, 4, 15.5)  # 2 was last seen more than ttl_s ago (taken over by another learner)
    assert waiting.held[acme] == {1: 9.0, 4: 15.5}
    waiting.release(acme, 1)
    waiting.release(acme, 4)
    assert acme not in waiting.held


async def test_an_orphan_whose_copy_was_applied_meanwhile_is_a_duplicate_not_a_dead_letter(harness: Harness) -> None:
    """Its redelivered copy was applied by a concurrent batch: the last attempt finds it stored."""
    harness.verdicts = ["unknown", "applied"]
    await harness.publish(_outcome().model_dump_json().encode(), delivered=1, age_s=61.0)
    assert harness.log == [("apply", 1), ("apply", 1), ("ack", None)]
    assert harness.dead_letters == []


async def test_a_poison_event_is_split_from_its_batch_and_the_others_are_applied(harness: Harness) -> None:
    events = [_outcome() for _ in range(3)]
    harness.error, harness.poison = ValueError("cannot be stored"), {events[1].selection_id}
    await asyncio.gather(*(harness.publish(e.model_dump_json().encode()) for e in events))
    assert harness.log[0] == ("apply", 3)  # the whole batch first, then its halves until the poison stands alone
    settled = sorted((e for e in harness.log if e[0] != "apply"), key=str)
    assert settled == [("ack", None), ("ack", None), ("nak", Settings().failed_event_delay_s)]
    assert ("apply", 1) in harness.log  # the poison was tried alone
    assert harness.dead_letters == []


async def test_a_poison_event_failing_alone_is_dead_lettered_with_its_error_after_bounded_attempts(
    harness: Harness,
) -> None:
    harness.error = ValueError("cannot be\nstored")
    body = _outcome().model_dump_json().encode()
    await harness.publish(body, delivered=Settings().poison_attempts)
    assert harness.log == [("apply", 1), ("ack", None)]
    assert harness.dead_letters == [(body, "failed: ValueError: cannot be stored")]


async def test_a_batch_failing_for_want_of_a_server_is_redelivered_whole_however_often(harness: Harness) -> None:
    harness.error = ConnectionRefusedError("postgres is down")
    events = [_outcome() for _ in range(3)]
    await asyncio.gather(*(harness.publish(e.model_dump_json().encode(), delivered=100) for e in events))
    assert harness.log == [("apply", 3)] + [("nak", Settings().failed_event_delay_s)] * 3
    assert harness.dead_letters == []


async def test_a_batch_whose_model_fails_is_redelivered_whole_and_never_dead_lettered(harness: Harness) -> None:
    """The embedding model out of memory is no event's fault: no split, no dead letter, however often."""

    async def out_of_memory(queries: Sequence[str]) -> np.ndarray:
        raise RuntimeError("onnxruntime: Failed to allocate memory")

    harness.embed = out_of_memory
    events = [_outcome() for _ in range(3)]
    attempts = Settings().poison_attempts
    await asyncio.gather(*(harness.publish(e.model_dump_json().encode(), delivered=attempts) for e in events))
    assert harness.log == [("apply", 3)] + [("nak", Settings().failed_event_delay_s)] * 3
    assert harness.dead_letters == []


async def test_json_too_deep_to_decode_is_dead_lettered_at_once(harness: Harness) -> None:
    body = b'{"selection_id": "%s", "calls": ' % str(uuid4()).encode() + b"[" * 5000 + b"]" * 5000 + b"}"
    await harness.publish(body)
    assert harness.log == [("ack", None)]
    ((_, reason),) = harness.dead_letters
    assert reason.startswith("malformed: ")


def test_an_event_is_admitted_as_its_sender_for_its_senders_tenant() -> None:
    acme = tenant_scope("acme", "bot")
    outcome = admitted(OutcomeEvent(selection_id=uuid4()), acme)
    assert outcome.sender == acme
    unnamed = FeedbackEvent.model_validate_json('{"plugin_id": "p", "name": "t", "rating": 1}')
    assert admitted(unnamed, acme).tenant_id == "acme"
    assert admitted(unnamed, OPERATOR).tenant_id == "default"
    with pytest.raises(RequestError, match="not the sender's tenant"):
        admitted(FeedbackEvent(plugin_id="p", name="t", rating=1, tenant_id="beta"), acme)


def _metadata(delivered: int, age_s: float, now: float) -> Msg.Metadata:
    stored = datetime.fromtimestamp(now - age_s, UTC)
    return Msg.Metadata(Msg.Metadata.SequencePair(1, 1), 0, delivered, stored, subjects.EVENTS_STREAM, "c")


def test_an_orphan_stops_waiting_after_the_timeout_or_max_deliver_deliveries() -> None:
    settings, now = Settings(orphan_timeout_s=60, max_deliver=4), 1_000_000.0
    assert deadline(_metadata(1, 59.0, now), settings, now) is None
    assert deadline(_metadata(1, 120.0, now), settings, now) == pytest.approx(now - 60.0)  # due since it was 60 s old
    assert deadline(_metadata(4, 1.0, now), settings, now) == now


def _consumer(pending: int, ack_pending: int, ack_floor: int) -> ConsumerInfo:
    return ConsumerInfo(
        "toolsel-learner-selection",
        subjects.EVENTS_STREAM,
        ConsumerConfig(),
        datetime.now(UTC),
        ack_floor=SequenceInfo(ack_floor, ack_floor),
        num_ack_pending=ack_pending,
        num_pending=pending,
    )


def test_a_consumer_with_no_backlog_has_applied_everything_before_any_mark() -> None:
    assert applied_through(_consumer(0, 0, 7), None)
    assert applied_through(_consumer(0, 0, 7), 100)


def test_a_consumer_behind_has_applied_only_what_it_saw_acknowledged() -> None:
    assert not applied_through(_consumer(5, 0, 7), None)  # no mark after the deadline seen yet: it may come
    assert not applied_through(_consumer(0, 2, 7), 8)  # the mark is in flight
    assert applied_through(_consumer(5, 2, 8), 8)  # a steady stream: the backlog is of events after the mark


def test_marks_are_a_second_apart_and_the_first_after_a_moment_bounds_what_was_stored_by_then() -> None:
    marks = Marks()
    for stored_at, sequence in [(10.0, 3), (10.5, 4), (11.0, 9), (11.2, 10), (13.0, 20)]:
        marks.saw(stored_at, sequence)
    assert list(marks.seen) == [(10.0, 3), (10.0 + MARK_EVERY_S, 9), (13.0, 20)]
    assert marks.after(9.0) == 3
    assert marks.after(10.0) == 9  # stored after the moment, not at it
    assert marks.after(12.0) == 20
    assert marks.after(13.0) is None
