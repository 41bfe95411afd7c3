"""What the learner tells the selectors after a batch commits: cut into messages NATS will carry (its server's
max_payload), in the order selectors rely on, and never raised into the batcher: the batch is committed, and
applying it again would find only duplicates and announce nothing."""

import asyncio
import itertools
import logging
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from uuid import UUID, uuid4

import asyncpg
import nats.errors
import pytest
from faststream.nats import NatsBroker, TestNatsBroker
from faststream.nats.annotations import NatsMessage
from hypothesis import given, settings
from hypothesis import strategies as st
from nats.aio.client import DEFAULT_MAX_PAYLOAD_SIZE

from toolsel.contracts import (
    OutcomeEvent,
    PosteriorsUpdated,
    PosteriorUpdate,
    ToolState,
    ToolStateChanged,
    UsageUpdated,
    subjects,
)
from toolsel.contracts.events import POSTERIOR_UPDATES_MAX as MAX_UPDATES
from toolsel.messaging import HEADERS_ROOM, room
from toolsel.services.learner import consumers, handlers
from toolsel.services.learner.broadcast import posterior_messages
from toolsel.services.learner.outcomes import OutcomeResult
from toolsel.services.learner.state import LearnerState
from toolsel.settings import Settings


def _update(name: str, alpha: float = 1.0, last_success_at: datetime | None = None) -> PosteriorUpdate:
    return PosteriorUpdate(
        plugin_id="plugin",
        name=name,
        tenant_id="acme",
        context_key="ctx",
        alpha=alpha,
        beta=2.0,
        last_success_at=last_success_at,
    )


def _size(message: PosteriorsUpdated) -> int:
    """Its bytes on the wire (FastStream sends a model as its JSON)."""
    return len(message.model_dump_json().encode())


UPDATES = st.lists(
    st.builds(
        _update,
        st.text(alphabet="aZ9_é工🙂", min_size=1, max_size=128),  # up to 4 bytes a character
        st.floats(0.01, 1e9),
        st.none() | st.datetimes(min_value=datetime(2000, 1, 1), timezones=st.just(UTC)),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(updates=UPDATES, limit=st.integers(800, 5000))  # 800: the largest update fits alone
def test_every_message_fits_and_together_they_carry_every_update_once_in_order(
    updates: list[PosteriorUpdate], limit: int
) -> None:
    messages = posterior_messages(updates, limit)
    assert [u for m in messages for u in m.updates] == updates
    assert all(_size(m) <= limit for m in messages)
    for before, after in itertools.pairwise(messages):  # as few as fit: cut only where it must be
        assert _size(PosteriorsUpdated(updates=[*before.updates, after.updates[0]])) > limit


def test_an_update_too_large_for_a_message_goes_alone_and_the_others_still_fit() -> None:
    small, large = _update("a"), _update("🙂" * 128)
    limit = _size(PosteriorsUpdated(updates=[small, small]))
    assert _size(PosteriorsUpdated(updates=[large])) > limit
    messages = posterior_messages([small, small, large, small], limit)
    assert [m.updates for m in messages] == [[small, small], [large], [small]]


def test_no_message_carries_more_updates_than_the_contract_allows() -> None:
    messages = posterior_messages([_update("t")] * (MAX_UPDATES + 1), 2**40)
    assert [len(m.updates) for m in messages] == [MAX_UPDATES, 1]


def test_the_room_is_the_servers_max_payload_less_the_headers() -> None:
    assert room(8192) == 8192 - HEADERS_ROOM
    assert room(None) == room(0) == room(object()) == DEFAULT_MAX_PAYLOAD_SIZE - HEADERS_ROOM


BATCH = 4
MAX_PAYLOAD = HEADERS_ROOM + 2048
"""A small server limit (the default is 1 MB), so that a few dozen updates are over it."""
POSTERIORS = [_update(f"tool-{i}", alpha=1.0 + i) for i in range(60)]
QUARANTINED = ToolStateChanged(plugin_id="plugin", name="tool-0", state=ToolState.QUARANTINED, reason="failing")
USAGE = UsageUpdated(version=7, tools=1)


@dataclass
class Learner:
    """The learner's outcome batcher and broadcasts over an in-memory broker, with a store that applies each event
    once (a batch applied again holds only duplicates: nothing learnt, so nothing to broadcast)."""

    state: LearnerState
    stored: set[UUID] = field(default_factory=set)
    applied: list[int] = field(default_factory=list)
    """The size of each batch the store was asked to apply."""
    heard: list[tuple[str, bytes]] = field(default_factory=list)
    """Every broadcast, in order, as the selectors receive it."""

    async def apply_outcomes(self, pool: asyncpg.Pool, batch: Sequence[OutcomeEvent], *rules: Any) -> OutcomeResult:
        self.applied.append(len(batch))
        new = [e.event_id for e in batch if e.event_id not in self.stored]
        self.stored.update(new)
        duplicates = [e.event_id for e in batch if e.event_id not in new]
        if not new:
            return OutcomeResult(duplicates=duplicates)
        learnt = {"posteriors": POSTERIORS, "transitions": [QUARANTINED], "usage": USAGE}
        return OutcomeResult(applied=new, duplicates=duplicates, **learnt)

    async def submit(self) -> list[Any]:
        batcher = self.state.batchers["outcome"]
        return await asyncio.gather(*(batcher.submit(OutcomeEvent(selection_id=uuid4())) for _ in range(BATCH)))

    def posteriors(self) -> list[PosteriorsUpdated]:
        bodies = [body for subject, body in self.heard if subject == subjects.POSTERIORS_UPDATED]
        return [PosteriorsUpdated.model_validate_json(body) for body in bodies]


@pytest.fixture
async def learner(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Learner]:
    settings = Settings(home=Path(tempfile.mkdtemp(prefix="toolsel-unit-")), learner_batch_size=BATCH)
    broker = NatsBroker()
    state = LearnerState.from_settings(
        settings, broker, broker.publisher(subjects.POSTERIORS_UPDATED), broker.publisher(subjects.TOOL_STATE_CHANGED)
    )
    state.store = cast(asyncpg.Pool, object())  # never used: the store is the fake below
    state.batchers = consumers.batchers(state, handlers.EVENT_KINDS)
    learner = Learner(state)
    monkeypatch.setattr(handlers, "apply_outcomes", learner.apply_outcomes)
    for subject in (subjects.POSTERIORS_UPDATED, subjects.USAGE_UPDATED, subjects.TOOL_STATE_CHANGED):

        @broker.subscriber(subject)
        async def hear(msg: NatsMessage) -> None:
            learner.heard.append((msg.raw_message.subject, msg.raw_message.data))

    async with TestNatsBroker(broker) as connected:
        connected.connection.max_payload = MAX_PAYLOAD
        yield learner


async def test_a_batchs_posteriors_arrive_in_messages_the_server_carries_then_usage_then_tool_states(
    learner: Learner,
) -> None:
    assert await learner.submit() == ["applied"] * BATCH
    posteriors = learner.posteriors()
    assert len(posteriors) > 1
    assert all(_size(m) <= MAX_PAYLOAD - HEADERS_ROOM for m in posteriors)
    assert [u for m in posteriors for u in m.updates] == POSTERIORS
    assert [s for s, _ in learner.heard[len(posteriors) :]] == [subjects.USAGE_UPDATED, subjects.TOOL_STATE_CHANGED]


async def test_a_broadcast_failing_after_commit_is_logged_and_the_batch_is_not_applied_again(
    learner: Learner, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def refused(*args: Any, **kwargs: Any) -> None:
        raise nats.errors.MaxPayloadError

    monkeypatch.setattr(learner.state.posteriors, "publish", refused)
    with caplog.at_level(logging.ERROR, logger="toolsel.learner"):
        assert await learner.submit() == ["applied"] * BATCH
    assert learner.applied == [BATCH]  # once: not split and applied again as duplicates
    assert (learner.state.counters.applied, learner.state.counters.duplicates) == (BATCH, 0)
    assert [s for s, _ in learner.heard] == [subjects.USAGE_UPDATED, subjects.TOOL_STATE_CHANGED]
    (logged,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert logged.exc_info is not None
    assert logged.exc_info[0] is nats.errors.MaxPayloadError
    assert f"{len(POSTERIORS)} posterior updates" in logged.getMessage()
