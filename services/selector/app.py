"""The selector app: answers select requests from memory; records selections after replying."""

import asyncio
import logging
from typing import Any

import asyncpg
from faststream import FastStream
from faststream.specification import AsyncAPI

from contracts import (
    PosteriorsUpdated,
    RegistryChanged,
    SelectionEvent,
    SelectReply,
    SelectRequest,
    ToolStateChanged,
    subjects,
)
from services.selector.catalog import load_catalog, load_posteriors
from services.selector.service import Selector
from toolsel import __version__
from toolsel.embedder import load_embedder
from toolsel.messaging import add_health, ensure_streams, events_stream, make_broker, rpc_router
from toolsel.settings import get_settings

log = logging.getLogger("toolsel.selector")
settings = get_settings()
broker_url = settings.nats_url or "nats://127.0.0.1:4222"
broker = make_broker(broker_url, "selector")
rpc = rpc_router()
asyncapi = AsyncAPI(
    broker,
    title="toolsel selector",
    version=__version__,
    description="Which few tools for this query, page and tenant: request/reply, from memory.",
)
app = FastStream(broker, specification=asyncapi)
EVENTS = events_stream()
selections = broker.publisher(subjects.SELECTION_EVENTS, stream=EVENTS, title="selection-events", schema=SelectionEvent)

state: dict[str, Any] = {"selections": 0, "pending": set()}


def _selector() -> Selector:
    selector: Selector = state["selector"]
    return selector


async def _record(event: SelectionEvent) -> None:
    try:
        await selections.publish(event)
    except Exception:
        log.exception("selection event %s not recorded", event.selection_id)


@rpc.subscriber(
    subjects.SELECT,
    queue=subjects.SELECTOR_QUEUE,
    title="select",
    description="Select the tools for a query; a bad request gets a typed error reply.",
)
async def select(request: SelectRequest) -> SelectReply:
    reply, event = _selector().select(request)
    state["selections"] += 1
    if not request.dry_run:
        # recorded after the reply is on its way, never on its critical path
        task = asyncio.get_running_loop().create_task(_record(event))
        state["pending"].add(task)
        task.add_done_callback(state["pending"].discard)
    return reply


async def reload_catalog() -> None:
    """Swap in a fresh copy of the registry (a reference swap: requests in flight keep the old one)."""
    pool: asyncpg.Pool = state["pool"]
    _selector().catalog = await load_catalog(pool, settings)


@broker.subscriber(subjects.REGISTRY_CHANGED, title="registry-changed")
async def on_registry_changed(event: RegistryChanged) -> None:
    await reload_catalog()


@broker.subscriber(subjects.TOOL_STATE_CHANGED, title="tool-state")
async def on_tool_state(event: ToolStateChanged) -> None:
    await reload_catalog()


@broker.subscriber(subjects.POSTERIORS_UPDATED, title="posteriors")
async def on_posteriors(event: PosteriorsUpdated) -> None:
    posteriors = _selector().posteriors
    for u in event.updates:
        posteriors[(u.key, u.context_key)] = (u.alpha, u.beta)


async def _refresh_periodically() -> None:
    """The safety net for a missed broadcast: reload on the tool-list TTL."""
    while True:
        await asyncio.sleep(settings.tool_list_cache_ttl_s)
        try:
            await reload_catalog()
            _selector().posteriors = await load_posteriors(state["pool"])
        except Exception:
            log.exception("periodic reload failed; serving the copy in memory")


add_health(rpc, "selector", lambda: {"tools": len(_selector().catalog), "selections": state["selections"]})
broker.include_router(rpc)


@app.on_startup
async def _start() -> None:
    from toolsel.db import create_pool

    if not settings.database_url:
        raise RuntimeError("TOOLSEL_DATABASE_URL is not set")
    await ensure_streams(broker_url)
    pool = await create_pool(settings.database_url)
    state["pool"] = pool
    embedder = await asyncio.to_thread(
        load_embedder,
        settings.model_dir,
        settings.home,
        threads=settings.embedding_threads,
        batch_size=settings.embedding_batch_size,
        cache_size=settings.query_cache_size,
    )
    embedder.embed_query("warm up")
    state["selector"] = Selector(settings, await load_catalog(pool, settings), embedder, await load_posteriors(pool))
    state["refresher"] = asyncio.get_running_loop().create_task(_refresh_periodically())


@app.on_shutdown
async def _stop() -> None:
    state["refresher"].cancel()
    await asyncio.gather(*state["pending"], return_exceptions=True)
    await state["pool"].close()
