"""What every toolsel service is built from: its broker, its FastStream app with the AsyncAPI document, and
at start-up the streams, the store and (for some) the embedding model. The services' ``create_app``
factories call these; nothing here knows a service."""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import asyncpg
from faststream import FastStream
from faststream.nats import NatsBroker
from faststream.specification import AsyncAPI

from toolsel import __version__, embedding_space
from toolsel.embedder import Embedder, load_embedder
from toolsel.messaging import ensure_streams, make_broker
from toolsel.settings import Settings
from toolsel.store import create_pool

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"

Lifespan = Callable[..., AbstractAsyncContextManager[Any]]


def nats_url(settings: Settings) -> str:
    """The configured NATS server, or the default local one."""
    return settings.nats_url or DEFAULT_NATS_URL


def service_broker(settings: Settings, name: str) -> NatsBroker:
    """The NATS broker of one service, named ``toolsel-<name>`` in the server's connection list."""
    return make_broker(nats_url(settings), name, settings.shutdown_grace_s)


def service_app(broker: NatsBroker, name: str, description: str, lifespan: Lifespan) -> FastStream:
    """The FastStream app of one service with its AsyncAPI document (``app.schema``) and lifespan."""
    asyncapi = AsyncAPI(broker, title=f"toolsel {name}", version=__version__, description=description)
    return FastStream(broker, specification=asyncapi, lifespan=lifespan)


async def open_store(settings: Settings) -> asyncpg.Pool:
    """Streams first (consumers bind to them), then the migrated store, whose vectors must be this model's."""
    if not settings.database_url:
        raise RuntimeError("TOOLSEL_DATABASE_URL is not set")
    await ensure_streams(nats_url(settings), settings)
    pool = await create_pool(settings.database_url)
    try:
        await embedding_space.check(pool, settings)
    except BaseException:
        await pool.close()
        raise
    return pool


async def load_model(settings: Settings, *, cache: bool = True) -> Embedder:
    """The embedding model, loaded off the event loop; ``cache`` keeps repeated queries (a selector's and the
    learner's case). Its vectors must have the size the settings say (the store's record of the model says it too)."""
    embedder = await asyncio.to_thread(
        load_embedder,
        settings.model_dir,
        settings.home,
        threads=settings.embedding_threads,
        workers=settings.embedding_workers,
        batch_size=settings.embedding_batch_size,
        batch_tokens=settings.embedding_batch_tokens,
        cache_size=settings.query_cache_size if cache else 0,
        model_name=settings.embedding_model,
        dim=settings.embedding_dim,
    )
    if embedder.dim != settings.embedding_dim:
        raise ValueError(
            f"{settings.embedding_model} makes {embedder.dim}-d vectors and TOOLSEL_EMBEDDING_DIM says"
            f" {settings.embedding_dim}: set it to {embedder.dim}"
        )
    return embedder


async def every(seconds: float, work: Callable[[], Awaitable[object]], log: logging.Logger, what: str) -> None:
    """``work`` every ``seconds``, for good: a service's periodic task, which a failure never ends (logged as
    ``what`` failing, and the next run tries again)."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await work()
        except Exception:
            log.exception("%s failed; trying again later", what)
