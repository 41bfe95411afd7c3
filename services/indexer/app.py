"""The indexer app: plugin syncs by request/reply or as durable JetStream events."""

import asyncio
import logging
from typing import Any

import asyncpg
from faststream import FastStream
from faststream.nats import NatsMessage, PullSub
from faststream.specification import AsyncAPI
from pydantic import ValidationError

from contracts import PluginSync, RegistryChanged, SyncReport, subjects
from services.indexer.auth import authorise
from services.indexer.registry import apply_sync, embed_pending
from toolsel import __version__
from toolsel.embedder import Embedder, load_embedder
from toolsel.messaging import (
    RequestError,
    add_health,
    dead_letter,
    ensure_streams,
    events_stream,
    make_broker,
    rpc_router,
    validation_reply,
)
from toolsel.settings import get_settings

log = logging.getLogger("toolsel.indexer")
settings = get_settings()
broker_url = settings.nats_url or "nats://127.0.0.1:4222"
broker = make_broker(broker_url, "indexer")
rpc = rpc_router()
asyncapi = AsyncAPI(
    broker,
    title="toolsel indexer",
    version=__version__,
    description="Keeps the tool registry true to what plugins declare; embeds what changed.",
)
app = FastStream(broker, specification=asyncapi)

EVENTS = events_stream()
state: dict[str, Any] = {"syncs": 0}
registry_changed = broker.publisher(subjects.REGISTRY_CHANGED, title="registry-changed", schema=RegistryChanged)
sync_reports = broker.publisher(subjects.SYNC_REPORTS, stream=EVENTS, title="sync-report", schema=SyncReport)


def _pool() -> asyncpg.Pool:
    pool: asyncpg.Pool = state["pool"]
    return pool


def _embedder() -> Embedder:
    embedder: Embedder = state["embedder"]
    return embedder


async def run_sync(sync: PluginSync) -> SyncReport:
    """Authorise, write, embed, and tell the selectors when anything changed."""
    authorise(sync, settings.plugin_secrets)
    report = await apply_sync(_pool(), sync)
    async with state["embed_lock"]:
        embedded = await embed_pending(_pool(), _embedder())
    report = report.model_copy(update={"embedded": embedded})
    state["syncs"] += 1
    if report.inserted or report.updated or report.deleted or embedded:
        await registry_changed.publish(RegistryChanged(plugin_id=sync.plugin_id, reason="sync"))
    log.info("sync %s: %s", sync.plugin_id, report.model_dump(exclude={"schema_version"}))
    return report


@rpc.subscriber(
    subjects.SYNC,
    queue=subjects.INDEXER_QUEUE,
    title="sync",
    description="Sync a plugin's declaration and reply with the report (or a typed error).",
)
async def sync_request(sync: PluginSync) -> SyncReport:
    return await run_sync(sync)


@broker.subscriber(
    subjects.SYNC_EVENTS,
    stream=EVENTS,
    durable=subjects.INDEXER_DURABLE,
    pull_sub=PullSub(batch_size=1, timeout=1.0),
    title="sync-events",
    description="Syncs published as durable events; the report goes to the sync-report subject.",
)
async def sync_event(msg: NatsMessage) -> None:
    try:
        report = await run_sync(PluginSync.model_validate_json(msg.body))
    except ValidationError as invalid:
        await dead_letter(broker, "sync", msg.body, validation_reply(invalid).error.message)
        return
    except RequestError as refused:
        await dead_letter(broker, "sync", msg.body, refused.detail.message)
        return
    await sync_reports.publish(report)


add_health(rpc, "indexer", lambda: {"syncs": state["syncs"]})
broker.include_router(rpc)


@app.on_startup
async def _start() -> None:
    from toolsel.db import create_pool

    if not settings.database_url:
        raise RuntimeError("TOOLSEL_DATABASE_URL is not set")
    await ensure_streams(broker_url)
    state["pool"] = await create_pool(settings.database_url)
    state["embedder"] = await asyncio.to_thread(
        load_embedder,
        settings.model_dir,
        settings.home,
        threads=settings.embedding_threads,
        batch_size=settings.embedding_batch_size,
        cache_size=0,
    )
    state["embed_lock"] = asyncio.Lock()


@app.on_shutdown
async def _stop() -> None:
    await _pool().close()
