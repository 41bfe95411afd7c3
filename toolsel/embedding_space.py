"""Which model the stored vectors come from. A query embedded by one model is meaningless against another model's
vectors, even of the same size, and the store cannot tell them apart: every service checks its model against the
store's record when it starts, and changing the model is one deliberate step (``toolsel indexer
--switch-model``) that drops the tools' vectors (embedded again after) and writes what was learnt from queries'
vectors again with the new model (the caller derives it: the learner's ``relearn``)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import asyncpg

from toolsel.embedder import EARLIER_TOOLS_MODELS, MODEL_NAME, TOOLS_MODEL_NAME
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


STOCK = (MODEL_NAME, 384)
"""The model every store's vectors came from before the store recorded its model, when it was the default."""
SWITCH = (
    "stop every service and run `toolsel indexer --switch-model` (it embeds every tool and every learnt query again"
    " with {model})"
)


async def check(pool: asyncpg.Pool, settings: Settings) -> None:
    """Refuse to run on another model's vectors (recording the model when the store has no record yet: this one
    for a new store, the stock model for one that holds vectors from before the record, unless the model is set
    explicitly)."""
    unrecorded = None if "embedding_model" in settings.model_fields_set else STOCK
    async with pool.acquire() as conn:
        recorded = await space.claim(conn, settings.embedding_model, settings.embedding_dim, unrecorded)
    if recorded != (settings.embedding_model, settings.embedding_dim):
        raise ModelMismatch(mismatch(recorded, settings))


def mismatch(recorded: tuple[str, int], settings: Settings) -> str:
    """What to do when the stored vectors are another model's: plainly, for an upgrade from the stock model or an
    earlier revision of toolsel's own to the default one, the commands either way."""
    model, dim = settings.embedding_model, settings.embedding_dim
    upgrade = model == TOOLS_MODEL_NAME and "embedding_model" not in settings.model_fields_set
    if upgrade and recorded[0] in EARLIER_TOOLS_MODELS:
        return (
            f"this store's vectors come from {recorded[0]}, an earlier revision of toolsel's own model, no longer"
            f" shipped; the default is now {TOOLS_MODEL_NAME}, trained on more tool-retrieval data. To move the"
            " store to it, " + SWITCH.format(model=TOOLS_MODEL_NAME)
        )
    if upgrade and recorded == STOCK:
        return (
            f"this store's vectors come from {MODEL_NAME}, the default model of earlier versions; toolsel's default"
            f" is now {TOOLS_MODEL_NAME}, all-MiniLM-L6-v2 trained for tool retrieval. To move the store to it, "
            + SWITCH.format(model=TOOLS_MODEL_NAME)
            + f"; to keep the stock model, set TOOLSEL_EMBEDDING_MODEL={MODEL_NAME} for every service"
        )
    return (
        f"the stored vectors come from {recorded[0]} ({recorded[1]}-d) and this service is set for {model}"
        f" ({dim}-d): set TOOLSEL_EMBEDDING_MODEL and TOOLSEL_EMBEDDING_DIM back, or "
        + SWITCH.format(model="the new model")
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
