"""What the indexer's handlers share once the app has started: the store, the model and the broadcast."""

import asyncio
from dataclasses import dataclass, field
from typing import Annotated

import asyncpg
from faststream import Context
from faststream.nats.publisher.usecase import LogicPublisher

from toolsel.contracts import RegistryChanged
from toolsel.embedder import Embedder
from toolsel.services.indexer.embedding import embed_pending
from toolsel.settings import Settings

STATE = "indexer"
"""The key of the state in FastStream's context (set by the app's lifespan)."""


@dataclass
class IndexerState:
    settings: Settings
    pool: asyncpg.Pool
    embedder: Embedder
    registry_changed: LogicPublisher
    model_turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One embedding call at a time, in the order they asked (``embed_pending``)."""
    syncs: int = 0
    embedded: int = 0
    """Tools embedded since the start (the health reply shows it, beside the seconds it took the model)."""
    embedding_s: float = 0.0

    async def embed(self, plugin_id: str | None = None) -> int:
        """Embed what waits for a vector: a plugin's tools (after its sync or an operator's write of one), or every
        plugin's (a recompute, the start). Passes run side by side and take turns at the model, so one tenant's
        large sync does not hold another's small one until it ends. Returns how many tools it embedded."""
        done = await embed_pending(self.pool, self.embedder, self.model_turn, plugin_id)
        self.embedded += done.tools
        self.embedding_s += done.model_s
        return done.tools

    async def changed(self, plugin_id: str, reason: str, names: list[str] | None = None) -> None:
        """Tell the selectors to reload what they hold of the registry."""
        await self.registry_changed.publish(RegistryChanged(plugin_id=plugin_id, reason=reason, changed=names or []))


State = Annotated[IndexerState, Context(STATE)]
"""A handler's parameter of this type receives the indexer's state."""
