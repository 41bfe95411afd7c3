"""What every toolsel service is made of: a NATS broker, a router for request/reply, the FastStream app with
its AsyncAPI document, and at start-up the streams, the store and (for some) the embedding model."""

import asyncio
from dataclasses import dataclass

import asyncpg
from faststream import FastStream
from faststream.nats import NatsBroker, NatsRouter
from faststream.specification import AsyncAPI

from toolsel import __version__
from toolsel.db import create_pool
from toolsel.embedder import Embedder, load_embedder
from toolsel.messaging import ensure_streams, make_broker, rpc_router
from toolsel.settings import Settings

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"


@dataclass(frozen=True)
class Service:
    settings: Settings
    broker: NatsBroker
    rpc: NatsRouter
    asyncapi: AsyncAPI
    app: FastStream

    @property
    def nats_url(self) -> str:
        return self.settings.nats_url or DEFAULT_NATS_URL


def make_service(name: str, description: str, settings: Settings) -> Service:
    """The broker, request/reply router and app of one service, named for its AsyncAPI document."""
    broker = make_broker(settings.nats_url or DEFAULT_NATS_URL, name)
    asyncapi = AsyncAPI(broker, title=f"toolsel {name}", version=__version__, description=description)
    return Service(settings, broker, rpc_router(), asyncapi, FastStream(broker, specification=asyncapi))


async def open_store(settings: Settings) -> asyncpg.Pool:
    """Streams first (consumers bind to them), then the migrated store."""
    if not settings.database_url:
        raise RuntimeError("TOOLSEL_DATABASE_URL is not set")
    await ensure_streams(settings.nats_url or DEFAULT_NATS_URL)
    return await create_pool(settings.database_url)


async def load_model(settings: Settings, *, cache: bool = True) -> Embedder:
    """The embedding model, loaded off the event loop; ``cache`` keeps repeated queries (the selector's case)."""
    return await asyncio.to_thread(
        load_embedder,
        settings.model_dir,
        settings.home,
        threads=settings.embedding_threads,
        batch_size=settings.embedding_batch_size,
        cache_size=settings.query_cache_size if cache else 0,
    )
