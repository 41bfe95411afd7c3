"""An outcome whose selection is not stored yet, through a real NATS server with the learner's own user: it waits
while the selection may still be in the selection consumer's backlog, however old it is (a learner that was down
or is behind), and is dead-lettered once that consumer has applied every selection stored by its deadline, even
while newer selections keep it busy; past its sender's bound of waiting ones, at once (they held the slots every
tenant shares)."""

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import nats
import pytest
from faststream.nats import NatsBroker
from nats.aio.client import Client
from nats.js.api import DeliverPolicy

from tests.integration.catalog import eventually, selection_event
from toolsel.contracts import OutcomeEvent, SelectionEvent, subjects
from toolsel.contracts.identity import Scope, tenant_scope
from toolsel.embedded import EmbeddedNats
from toolsel.messaging import ensure_streams
from toolsel.services.learner import consumers
from toolsel.services.learner.consumers import EventKind
from toolsel.services.learner.state import Applied, LearnerState
from toolsel.settings import Settings

AGENT = tenant_scope("acme", "agent")
VICTIM = tenant_scope("globex", "agent")


@dataclass
class Learner:
    """A learner's selection and outcome consumers: a selection is stored when applied (a held one once released);
    an outcome is applied once its selection is stored, looked up while ``outcomes_open`` is set."""

    operator: Client
    stored: set[UUID] = field(default_factory=set)
    held: dict[UUID, asyncio.Event] = field(default_factory=dict)
    selections_seen: list[UUID] = field(default_factory=list)
    outcomes_open: asyncio.Event = field(default_factory=asyncio.Event)
    lookups: Counter[UUID] = field(default_factory=Counter)
    applied: set[UUID] = field(default_factory=set)
    sequences: dict[UUID, int] = field(default_factory=dict)
    """Where each selection published is in the stream."""

    async def selections(self, state: LearnerState, batch: Sequence[SelectionEvent]) -> list[Applied]:
        for event in batch:
            self.selections_seen.append(event.selection_id)
            if event.selection_id in self.held:
                await self.held[event.selection_id].wait()
            self.stored.add(event.selection_id)
        return ["applied"] * len(batch)

    async def outcomes(self, state: LearnerState, batch: Sequence[OutcomeEvent]) -> list[Applied]:
        await self.outcomes_open.wait()
        verdicts: list[Applied] = []
        for event in batch:
            self.lookups[event.event_id] += 1
            if event.selection_id in self.stored:
                self.applied.add(event.event_id)
                verdicts.append("applied")
            else:
                verdicts.append("unknown")
        return verdicts

    async def select(self, hold: bool = False, by: Scope = AGENT) -> SelectionEvent:
        """Publish a selection event (held in its batch, unapplied and unacknowledged, until released)."""
        event = selection_event(owner=by.token)
        if hold:
            self.held[event.selection_id] = asyncio.Event()
        ack = await self.operator.jetstream().publish(subjects.SELECTION_EVENTS, event.model_dump_json().encode())
        self.sequences[event.selection_id] = ack.seq
        return event

    async def report(self, selection_id: UUID, by: Scope = AGENT) -> OutcomeEvent:
        event = OutcomeEvent(selection_id=selection_id)
        subject = subjects.scoped(subjects.OUTCOME_ROOT, by.token)
        await self.operator.jetstream().publish(subject, event.model_dump_json().encode())
        return event

    async def delivered(self, selection_id: UUID) -> bool:
        async def seen() -> bool:
            return selection_id in self.selections_seen

        return await eventually(seen)

    async def acknowledged(self, selection_id: UUID) -> bool:
        """Whether the selection consumer's acknowledgements have reached this selection."""

        async def reached() -> bool:
            info = await self.operator.jetstream().consumer_info(
                subjects.EVENTS_STREAM, subjects.learner_durable("selection")
            )
            return info.ack_floor is not None and info.ack_floor.stream_seq >= self.sequences[selection_id]

        return await eventually(reached)

    def release(self) -> None:
        self.outcomes_open.set()
        for gate in self.held.values():
            gate.set()


@pytest.fixture
async def nats_server(tmp_path: Path) -> AsyncIterator[EmbeddedNats]:
    server = EmbeddedNats(tmp_path / "nats")
    server.start()
    try:
        await ensure_streams(server.login("learner"), Settings())
        yield server
    finally:
        server.stop()


@pytest.fixture
async def learner(nats_server: EmbeddedNats, tmp_path: Path) -> AsyncIterator[Learner]:
    """Every outcome is past its deadline at once (``orphan_timeout_s`` 0): whether it waits is the backlog's."""
    async with running(nats_server, Settings(home=tmp_path, learner_batch_timeout_s=0.01, orphan_timeout_s=0.0)) as it:
        yield it


@contextlib.asynccontextmanager
async def running(nats_server: EmbeddedNats, settings: Settings) -> AsyncIterator[Learner]:
    """A learner's selection and outcome consumers, as ``settings`` say."""
    operator = await nats.connect(nats_server.login("operator"))
    harness = Learner(operator)
    harness.outcomes_open.set()
    broker = NatsBroker(nats_server.login("learner"))
    state = LearnerState.from_settings(settings, broker, broker.publisher("x"), broker.publisher("y"))
    kinds: list[EventKind[Any]] = [
        EventKind("selection", subjects.SELECTION_EVENTS, SelectionEvent, harness.selections, lambda e: ""),
        EventKind(
            "outcome",
            subjects.OUTCOME_ROOT,
            OutcomeEvent,
            harness.outcomes,
            lambda e: f"unknown selection {e.selection_id}",
            scoped=True,
            awaits="selection",
        ),
    ]
    state.batchers = consumers.batchers(state, kinds)
    state.marks = consumers.marks(kinds)
    broker.include_router(consumers.router(state, kinds))
    await broker.start()
    try:
        yield harness
    finally:
        harness.release()
        await broker.stop()
        await operator.close()


async def dead_letters(client: Client) -> list[tuple[bytes, str]]:
    """The outcome dead letters so far, with their reasons."""
    sub = await client.jetstream().subscribe(
        subjects.dead_letter("outcome"), ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
    )
    letters = []
    try:
        while True:
            msg = await sub.next_msg(timeout=0.5)
            letters.append((msg.data, (msg.headers or {}).get("toolsel-reason", "")))
    except nats.errors.TimeoutError:
        return letters
    finally:
        await sub.unsubscribe()


async def test_an_outcome_past_its_deadline_waits_while_its_selection_is_in_the_backlog(learner: Learner) -> None:
    """The learner was down: the outcome is too old on its first delivery, its selection still unapplied."""
    late = await learner.select(hold=True)
    assert await learner.delivered(late.selection_id)
    outcome = await learner.report(late.selection_id)

    async def retried() -> bool:
        return learner.lookups[outcome.event_id] >= 3

    assert await eventually(retried)
    assert await dead_letters(learner.operator) == []
    learner.held[late.selection_id].set()

    async def applied() -> bool:
        return outcome.event_id in learner.applied

    assert await eventually(applied)
    assert await dead_letters(learner.operator) == []


async def test_an_orphan_is_dead_lettered_once_every_selection_before_its_deadline_is_applied(
    learner: Learner,
) -> None:
    """Even while the selection consumer is never idle: what it still holds was stored after the deadline."""
    learner.outcomes_open.clear()  # the orphan is looked up once the selections below are in place
    orphan = await learner.report(uuid4())
    after = await learner.select()
    assert await learner.acknowledged(after.selection_id)
    busy = await learner.select(hold=True)
    assert await learner.delivered(busy.selection_id)
    learner.outcomes_open.set()

    async def dead_lettered() -> list[tuple[bytes, str]]:
        return await dead_letters(learner.operator)

    letters = await eventually(dead_lettered)
    assert [reason for _, reason in letters] == [f"unknown selection {orphan.selection_id}"]
    assert busy.selection_id not in learner.stored  # still in the backlog all along


async def test_an_orphan_is_dead_lettered_at_its_deadline_when_no_selection_is_pending(learner: Learner) -> None:
    orphan = await learner.report(uuid4())

    async def dead_lettered() -> list[tuple[bytes, str]]:
        return await dead_letters(learner.operator)

    letters = await eventually(dead_lettered)
    assert [reason for _, reason in letters] == [f"unknown selection {orphan.selection_id}"]
    assert learner.lookups[orphan.event_id] == 2  # and a last attempt


async def test_past_its_senders_bound_an_orphan_is_dead_lettered_at_once_and_anothers_outcome_goes_through(
    nats_server: EmbeddedNats, tmp_path: Path
) -> None:
    """Outcomes of made-up selections from one sender: each waited for ``orphan_timeout_s`` holding one of the
    consumer's slots, which every tenant shares, and a victim's outcome waited behind them (49.9 s for 9,000). Now
    that sender's first ``orphans_per_sender_max`` wait, and the rest are dead-lettered at once."""
    settings = Settings(
        home=tmp_path,
        learner_batch_size=2,  # 8 slots (``consumers.in_hand``)
        learner_batch_timeout_s=0.01,
        orphan_timeout_s=600.0,
        max_deliver=10_000,
        orphans_per_sender_max=3,
    )
    async with running(nats_server, settings) as learner:
        flood = [await learner.report(uuid4()) for _ in range(30)]
        victims = await learner.select(by=VICTIM)
        victim = await learner.report(victims.selection_id, VICTIM)

        async def applied() -> bool:
            return victim.event_id in learner.applied

        assert await eventually(applied)

        async def crowded_out() -> list[tuple[bytes, str]] | None:
            letters = await dead_letters(learner.operator)
            return letters if len(letters) >= len(flood) - settings.orphans_per_sender_max else None

        letters = await eventually(crowded_out)
        dropped = {OutcomeEvent.model_validate_json(body).event_id for body, _ in letters}
        assert len(dropped) == len(letters) == len(flood) - settings.orphans_per_sender_max
        assert all("too many of this sender's events (3) wait" in reason for _, reason in letters)
        waiting = [e.event_id for e in flood if e.event_id not in dropped]
        assert all(learner.lookups[e] >= 1 for e in waiting)  # the sender's first three still wait, retried


async def test_past_its_senders_bound_an_orphan_waits_while_its_selection_may_be_in_the_backlog(
    nats_server: EmbeddedNats, tmp_path: Path
) -> None:
    """A learner catching up on selections holds many of every sender's outcomes, rightly: none is dead-lettered
    for the bound until the selection consumer has applied what was stored before it."""
    settings = Settings(
        home=tmp_path,
        learner_batch_timeout_s=0.01,
        orphan_timeout_s=600.0,
        max_deliver=10_000,
        orphans_per_sender_max=3,
    )
    async with running(nats_server, settings) as learner:
        behind = await learner.select(hold=True)
        assert await learner.delivered(behind.selection_id)
        waiting = [await learner.report(uuid4()) for _ in range(6)]

        async def retried() -> bool:
            return all(learner.lookups[e.event_id] >= 3 for e in waiting)

        assert await eventually(retried)
        assert await dead_letters(learner.operator) == []
        learner.held[behind.selection_id].set()

        async def crowded_out() -> list[tuple[bytes, str]] | None:
            letters = await dead_letters(learner.operator)
            return letters if len(letters) >= len(waiting) - settings.orphans_per_sender_max else None

        assert len(await eventually(crowded_out)) == len(waiting) - settings.orphans_per_sender_max


async def test_events_waiting_behind_slow_batches_are_delivered_once(nats_server: EmbeddedNats, tmp_path: Path) -> None:
    """Batches slower than the ack-wait: every event the server awaits the acknowledgement of is in a handler that
    says it is in progress. With handlers for one batch only, those behind it waited unheard of, were delivered
    again, and applied again."""
    settings = Settings(home=tmp_path, learner_batch_size=5, learner_batch_timeout_s=0.05, learner_ack_wait_s=1.0)
    broker = NatsBroker(nats_server.login("learner"))
    state = LearnerState.from_settings(settings, broker, broker.publisher("x"), broker.publisher("y"))
    applied: Counter[UUID] = Counter()

    async def slow(state: LearnerState, batch: Sequence[OutcomeEvent]) -> list[Applied]:
        await asyncio.sleep(0.8)  # a batch's embedding and transaction
        applied.update(event.event_id for event in batch)
        return ["applied"] * len(batch)

    kinds: list[EventKind[Any]] = [
        EventKind("outcome", subjects.OUTCOME_ROOT, OutcomeEvent, slow, lambda e: "", scoped=True)
    ]
    state.batchers = consumers.batchers(state, kinds)
    broker.include_router(consumers.router(state, kinds))
    operator = await nats.connect(nats_server.login("operator"))
    await broker.start()
    try:
        sent = [OutcomeEvent(selection_id=uuid4()) for _ in range(20)]
        for event in sent:
            await operator.jetstream().publish(
                subjects.scoped(subjects.OUTCOME_ROOT, AGENT.token), event.model_dump_json().encode()
            )

        async def all_applied() -> bool:
            return len(applied) == len(sent)

        assert await eventually(all_applied, timeout_s=30)
        await asyncio.sleep(2 * settings.learner_ack_wait_s)  # past the ack-wait a copy would come again
        assert sorted(applied.values()) == [1] * len(sent)
    finally:
        await broker.stop()
        await operator.close()
