"""The selector app: answers select requests from memory; records selections after replying."""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from contracts import (
    OutcomeEvent,
    PosteriorsUpdated,
    RegistryChanged,
    SelectionEvent,
    SelectReply,
    SelectRequest,
    ToolStateChanged,
    subjects,
)
from services.selector.catalog import load_catalog, load_posteriors, load_review_index, load_rules
from services.selector.service import Selector
from toolsel.embedder import Embedder
from toolsel.messaging import add_health, events_stream
from toolsel.service import load_model, make_service, open_store
from toolsel.settings import get_settings

log = logging.getLogger("toolsel.selector")
settings = get_settings()
service = make_service(
    "selector",
    "Which few tools for this query, page and tenant: request/reply, from memory.",
    settings,
)
broker, rpc, asyncapi, app = service.broker, service.rpc, service.asyncapi, service.app
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


async def _refresh(source: str, load: Callable[[asyncpg.Pool], Awaitable[None]]) -> None:
    """Reload one piece of state; on failure keep serving the copy in memory and say so in replies."""
    selector = _selector()
    try:
        await load(state["pool"])
    except Exception:
        log.exception("reloading %s failed; serving the copy in memory", source)
        selector.degraded_sources.add(f"{source}.stale")
    else:
        selector.degraded_sources.discard(f"{source}.stale")


async def _load_registry(pool: asyncpg.Pool) -> None:
    """A reference swap: requests in flight keep the copy they started with."""
    selector = _selector()
    selector.catalog = await load_catalog(pool, settings)
    selector.rules = await load_rules(pool)


async def _load_rules(pool: asyncpg.Pool) -> None:
    _selector().rules = await load_rules(pool)


async def _load_posteriors(pool: asyncpg.Pool) -> None:
    _selector().posteriors = await load_posteriors(pool)


async def _load_reviews(pool: asyncpg.Pool) -> None:
    version = tuple(await pool.fetchrow("SELECT count(*), coalesce(max(id), 0) FROM review_index"))
    if version != state.get("reviews_version"):
        _selector().reviews = await load_review_index(pool, settings.embedding_dim)
        state["reviews_version"] = version


@broker.subscriber(subjects.REGISTRY_CHANGED, title="registry-changed")
async def on_registry_changed(event: RegistryChanged) -> None:
    await _refresh("registry", _load_registry)


@broker.subscriber(subjects.TOOL_STATE_CHANGED, title="tool-state")
async def on_tool_state(event: ToolStateChanged) -> None:
    await _refresh("registry", _load_registry)


@broker.subscriber(subjects.POSTERIORS_UPDATED, title="posteriors")
async def on_posteriors(event: PosteriorsUpdated) -> None:
    selector = _selector()
    for u in event.updates:
        selector.learn(u.key, u.context_key, u.alpha, u.beta)


# Core subscriptions to stream subjects: never reply, or the publisher would take the reply for the stream's ack.
@broker.subscriber(
    subjects.SELECTION_EVENTS, no_reply=True, title="selections-seen", description="For each user's history."
)
async def on_selection_seen(event: SelectionEvent) -> None:
    _selector().history.record_selection(event)


@broker.subscriber(
    subjects.OUTCOME_EVENTS, no_reply=True, title="outcomes-seen", description="For each user's history."
)
async def on_outcome_seen(event: OutcomeEvent) -> None:
    _selector().history.record_outcome(event)


async def _every(seconds: float, source: str, load: Callable[[asyncpg.Pool], Awaitable[None]]) -> None:
    """The safety net for a missed broadcast: reload on the cache TTL."""
    while True:
        await asyncio.sleep(seconds)
        await _refresh(source, load)


add_health(rpc, "selector", lambda: {"tools": len(_selector().catalog), "selections": state["selections"]})
broker.include_router(rpc)


@app.on_startup
async def _start() -> None:
    pool = await open_store(settings)
    state["pool"] = pool
    embedder: Embedder | None = None
    try:
        embedder = await load_model(settings)
        embedder.embed_query("warm up")
    except Exception:
        log.exception("the embedding model did not load; answering with BM25 alone")
    state["selector"] = Selector(settings, await load_catalog(pool, settings), embedder)
    for source, load in (("registry", _load_registry), ("posteriors", _load_posteriors), ("reviews", _load_reviews)):
        await _refresh(source, load)
    loop = asyncio.get_running_loop()
    state["refreshers"] = [
        loop.create_task(_every(settings.tool_list_cache_ttl_s, "registry", _load_registry)),
        loop.create_task(_every(settings.policy_cache_ttl_s, "rules", _load_rules)),
        loop.create_task(_every(settings.tool_list_cache_ttl_s, "posteriors", _load_posteriors)),
        loop.create_task(_every(settings.review_index_refresh_s, "reviews", _load_reviews)),
    ]


@app.on_shutdown
async def _stop() -> None:
    for task in state["refreshers"]:
        task.cancel()
    await asyncio.gather(*state["pending"], return_exceptions=True)
    await state["pool"].close()
