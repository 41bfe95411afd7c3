"""Which model the stored vectors come from. A query embedded by one model is meaningless against another model's
vectors, even of the same size, and the store cannot tell them apart: every service checks its model against the
store's record when it starts, and changing the model is one deliberate step (``toolsel indexer
--switch-model``) that drops the tools' vectors (embedded again after) and writes what was learnt from queries'
vectors again with the new model (the caller derives it: the learner's ``relearn``)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import asyncpg

from toolsel.settings import Settings
from toolsel.store import registry, space

R = TypeVar("R")


class ModelMismatch(RuntimeError):
    """The service is set for another model than the one the stored vectors come from."""


@dataclass(frozen=True)
class Switched(Generic[R]):
    """What a switch of model dropped and what it wrote again."""

    previous: tuple[str, int] | None
    """The model the vectors came from and its size (None: none was recorded)."""
    tools: int
    """Tools whose vector was dropped (the live ones wait for the new model's)."""
    learnt: R
    """What the learnt state's rewrite returned."""


async def check(pool: asyncpg.Pool, settings: Settings) -> None:
    """Refuse to run on another model's vectors (recording this model's when the store has no record yet)."""
    async with pool.acquire() as conn:
        recorded = await space.claim(conn, settings.embedding_model, settings.embedding_dim)
    if recorded != (settings.embedding_model, settings.embedding_dim):
        raise ModelMismatch(
            f"the stored vectors come from {recorded[0]} ({recorded[1]}-d) and this service is set for"
            f" {settings.embedding_model} ({settings.embedding_dim}-d): set TOOLSEL_EMBEDDING_MODEL and"
            " TOOLSEL_EMBEDDING_DIM back, or stop every service and run `toolsel indexer --switch-model` with the"
            " new ones (it embeds every tool and every learnt query again)"
        )


async def switch(
    pool: asyncpg.Pool, settings: Settings, relearn: Callable[[asyncpg.Connection], Awaitable[R]]
) -> Switched[R]:
    """Record this model as the store's, drop the tools' vectors (they wait for new ones) and write what was
    learnt from queries' vectors with this model (``relearn``, given the connection), in one transaction: a
    switch that fails leaves the previous model's store whole. What does not depend on the vector space stays:
    posteriors, quality, health, the events."""
    async with pool.acquire() as conn, conn.transaction():
        previous = await space.recorded(conn)
        tools = await registry.forget_vectors(conn)
        learnt = await relearn(conn)
        await space.record(conn, settings.embedding_model, settings.embedding_dim)
    return Switched(previous, tools, learnt)
