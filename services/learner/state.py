"""What one learner process holds while it runs: its settings, store, model, publishers and counters."""

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import asyncpg
import numpy as np
import numpy.typing as npt
from faststream.nats import NatsBroker
from faststream.nats.publisher.usecase import LogicPublisher

from services.learner.batcher import Batcher
from services.learner.degradation import DegradationPolicy
from services.learner.fitness import Multipliers
from toolsel.embedder import Embedder
from toolsel.runtime import load_model
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


@dataclass
class LearnerState:
    """Built by ``create_app``; the store is opened (and the timer started) by the app's lifespan."""

    settings: Settings
    broker: NatsBroker
    posteriors: LogicPublisher
    """``PosteriorsUpdated`` broadcasts to the selectors."""
    tool_states: LogicPublisher
    """``ToolStateChanged`` broadcasts to the selectors."""
    policy: DegradationPolicy
    multipliers: Multipliers
    counters: Counters = field(default_factory=Counters)
    batchers: dict[str, Batcher[Any, Applied]] = field(default_factory=dict)
    """One per event kind (``consumers.EventKind.name``)."""
    store: asyncpg.Pool | None = None
    embedder: Embedder | None = None
    embedder_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    release_timer: asyncio.Task[None] | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, broker: NatsBroker, posteriors: LogicPublisher, tool_states: LogicPublisher
    ) -> "LearnerState":
        return cls(
            settings,
            broker,
            posteriors,
            tool_states,
            DegradationPolicy.from_settings(settings),
            Multipliers.from_settings(settings),
        )

    @property
    def pool(self) -> asyncpg.Pool:
        if self.store is None:
            raise RuntimeError("the learner's store is not open (the app has not started)")
        return self.store

    async def embed(self, queries: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit embeddings of these queries, one row each; the model is loaded on the first review (outcomes
        and feedback need none), once."""
        async with self.embedder_lock:
            if self.embedder is None:
                self.embedder = await load_model(self.settings)
        embedder = self.embedder
        return await asyncio.to_thread(lambda: np.vstack([embedder.embed_query(q) for q in queries]))
