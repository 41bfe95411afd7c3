"""What one learner process holds while it runs: its settings, store, model, publishers and counters."""

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import asyncpg
import numpy as np
import numpy.typing as npt
from faststream.nats import NatsBroker
from faststream.nats.publisher.usecase import LogicPublisher

from toolsel.batching import Batcher
from toolsel.contracts import UsageUpdated, subjects
from toolsel.embedder import Embedder
from toolsel.runtime import load_model
from toolsel.services.learner.degradation import DegradationPolicy
from toolsel.services.learner.fitness import Multipliers
from toolsel.services.learner.outcomes import OutcomeRules
from toolsel.settings import Settings

Applied = Literal["applied", "unknown"]
"""What became of one event of a batch: applied (or a duplicate, which is as good), or it refers to something
not stored yet (its selection, or for feedback its tool) and is to be retried."""


@dataclass
class Counters:
    """Health details: what this process applied, recognised as repeats, or kept aside, since it started."""

    applied: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    reviews: int = 0
    feedback: int = 0
    transitions: int = 0

    def details(self) -> dict[str, int]:
        return asdict(self)


MARK_EVERY_S = 1.0
"""How far apart the marks of one event kind are (``Marks``): what waits for that kind waits at most this longer."""
MARKS_KEPT = 3600
"""Marks kept per event kind (an hour of them): an event waiting longer is matched with a later mark, so it waits
longer, never less."""


@dataclass
class Marks:
    """Where the events stream stood, as the deliveries of one event kind showed it: (when an event was stored, its
    stream sequence), oldest first, one per ``MARK_EVERY_S`` at most. Every event stored by a moment precedes, in
    the stream, an event stored after it."""

    seen: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=MARKS_KEPT))

    def saw(self, stored_at: float, sequence: int) -> None:
        if not self.seen or stored_at >= self.seen[-1][0] + MARK_EVERY_S:
            self.seen.append((stored_at, sequence))

    def after(self, moment: float) -> int | None:
        """The sequence of the first mark stored after ``moment``; None when none was seen yet."""
        return next((sequence for stored_at, sequence in self.seen if stored_at > moment), None)


@dataclass
class Waiting:
    """The events a learner holds waiting for what they refer to (an outcome's selection, feedback's tool), by
    stream sequence, per (event kind, sender): each held event takes one of its kind's consumer's slots, which
    every tenant shares, so one sender may hold ``limit`` at most (``consumers.may_wait``). An entry no delivery
    refreshed for ``ttl_s`` is of an event another learner took over, or resolved: it is forgotten."""

    limit: int
    ttl_s: float
    held: dict[tuple[str, str], dict[int, float]] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> "Waiting":
        """A held event is delivered again within its ack-wait of its last try (at most its deadline apart)."""
        return cls(settings.orphans_per_sender_max, settings.orphan_timeout_s + settings.learner_ack_wait_s)

    def hold(self, sender: tuple[str, str], sequence: int, now: float) -> bool:
        """Whether the event at stream ``sequence`` may wait: it is held already, or its sender holds fewer than
        ``limit``; it is then held as of ``now``."""
        mine = self.held.setdefault(sender, {})
        if sequence not in mine and len(mine) >= self.limit:
            for stale in [s for s, seen in mine.items() if now - seen > self.ttl_s]:
                del mine[stale]
            if len(mine) >= self.limit:
                return False
        mine[sequence] = now
        return True

    def release(self, sender: tuple[str, str], sequence: int) -> None:
        """The event waits no more (applied, or dead-lettered)."""
        mine = self.held.get(sender)
        if mine is not None:
            mine.pop(sequence, None)
            if not mine:
                del self.held[sender]


@dataclass
class LearnerState:
    """Built by ``create_app``; the store is opened (and the timer started) by the app's lifespan."""

    settings: Settings
    broker: NatsBroker
    posteriors: LogicPublisher
    """``PosteriorsUpdated`` broadcasts to the selectors."""
    tool_states: LogicPublisher
    """``ToolStateChanged`` broadcasts to the selectors."""
    usage: LogicPublisher
    """``UsageUpdated`` broadcasts to the selectors."""
    policy: DegradationPolicy
    rules: OutcomeRules
    multipliers: Multipliers
    waiting: Waiting
    """Events held for what they refer to, per sender (``consumers.may_wait``)."""
    counters: Counters = field(default_factory=Counters)
    batchers: dict[str, Batcher[Any, Applied]] = field(default_factory=dict)
    """One per event kind (``consumers.EventKind.name``)."""
    marks: dict[str, Marks] = field(default_factory=dict)
    """One per event kind that another waits for (``consumers.EventKind.awaits``)."""
    store: asyncpg.Pool | None = None
    embedder: Embedder | None = None
    embedder_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    def from_settings(
        cls, settings: Settings, broker: NatsBroker, posteriors: LogicPublisher, tool_states: LogicPublisher
    ) -> "LearnerState":
        usage = broker.publisher(
            subjects.USAGE_UPDATED,
            title="usage-updated",
            schema=UsageUpdated,
            description="Usage vectors changed: selectors fetch the rows above the version they hold.",
        )
        return cls(
            settings,
            broker,
            posteriors,
            tool_states,
            usage,
            DegradationPolicy.from_settings(settings),
            OutcomeRules.from_settings(settings),
            Multipliers.from_settings(settings),
            Waiting.from_settings(settings),
        )

    @property
    def pool(self) -> asyncpg.Pool:
        if self.store is None:
            raise RuntimeError("the learner's store is not open (the app has not started)")
        return self.store

    async def embed(self, queries: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit embeddings of these queries, one row each: the ones not in the model's cache (agents repeat
        queries) are embedded in one batch, off the event loop; the model is loaded when first needed, once."""
        async with self.embedder_lock:
            if self.embedder is None:
                self.embedder = await load_model(self.settings)
        embedder = self.embedder
        rows = await asyncio.to_thread(embedder.embed_requests, [(q, ()) for q in queries])
        return np.vstack([vectors[0] for vectors in rows]) if rows else np.zeros((0, embedder.dim), dtype=np.float32)
