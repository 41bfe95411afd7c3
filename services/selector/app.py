"""The selector app: answers select requests from memory; records selections after replying, through an
outbox that keeps them while NATS or JetStream is away (they reach the stream once it is back).

The store is read at start-up, again on each broadcast that something changed, and on a timer in case a
broadcast was missed; a reload that fails leaves the copy in memory serving and the replies saying so.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import uuid4

import asyncpg
from faststream import FastStream
from faststream.nats import NatsRouter
from faststream.nats.annotations import NatsMessage
from faststream.nats.subscriber.usecases import LogicSubscriber
from pydantic import BaseModel, ValidationError

from toolsel.batching import Batcher
from toolsel.contracts import (
    OutcomeEvent,
    PosteriorsUpdated,
    RegistryChanged,
    SelectionEvent,
    SelectReply,
    SelectRequest,
    ToolStateChanged,
    UsageUpdated,
    subjects,
)
from toolsel.contracts.identity import parse_scope
from toolsel.embedder import Embedder, Matrix
from toolsel.heap import freeze_start_up_heap, release_freed_memory
from toolsel.messaging import add_health, events_stream, room, rpc_router, undecoded
from toolsel.outbox import Outbox
from toolsel.runtime import load_model, open_store, service_app, service_broker
from toolsel.services.selector.admission import Admission
from toolsel.services.selector.catalog import (
    Catalog,
    build_catalog,
    build_posteriors,
    build_review_index,
    build_rules,
    merge_posteriors,
    rechecked,
    stale_rows,
    unseen,
    with_changes,
    with_standing,
)
from toolsel.services.selector.fit import fit, offered
from toolsel.services.selector.selector import Selector
from toolsel.services.selector.usage import UsageMemory
from toolsel.settings import Settings
from toolsel.store import catalog as store
from toolsel.tenancy import sender, tenant_for

log = logging.getLogger("toolsel.selector")
E = TypeVar("E", bound=BaseModel)

DESCRIPTION = "Which few tools for this query, page and tenant: request/reply, from memory."


@dataclass
class SelectorState:
    """What the handlers share: the selector and the store it reloads from, with the app's own bookkeeping."""

    selector: Selector
    pool: asyncpg.Pool | None = None
    """Open while the app runs (the lifespan opens and closes it)."""
    selections: int = 0
    refreshers: list[asyncio.Task[None]] = field(default_factory=list)
    catalog_version: int = 0
    """The registry's version read just before the catalog in use (``store.catalog_version``)."""
    writes_found_by_check: int = 0
    """Tools the periodic check found written or gone that the copy had not taken in: nearly always a missed
    registry broadcast (a write whose broadcast is still on its way counts too), so an operator sees NATS losing
    them."""
    malformed_events: int = 0
    """Selection and outcome events followed for the users' history that were not valid events, ignored (the
    learner dead-letters them)."""
    reviews_version: tuple[int, int, int] | None = None
    """The review index's (entries, highest id, reviews) when last loaded: reloaded only when it changes."""
    reloading: dict[str, asyncio.Lock] = field(default_factory=dict)
    """One reload of a source at a time: two that overlapped could finish out of order, and a copy read before
    a change (a tool's quarantine) would replace the copy read after it."""
    waiting: set[str] = field(default_factory=set)
    """Sources with a reload waiting for its lock: a burst of broadcasts (every tenant's state changes of a
    failing shared tool) costs one more reload, not one each."""
    embedding: ThreadPoolExecutor | None = None
    """Where queries are embedded before a selection (open while the app runs)."""
    batcher: Batcher[tuple[str, Sequence[str]], list[Matrix]] | None = None
    """What gathers the requests that arrive together into one model call (while the app runs, with a model)."""

    @property
    def store(self) -> asyncpg.Pool:
        if self.pool is None:
            raise RuntimeError("the store is not open")
        return self.pool


Load = Callable[[SelectorState], Awaitable[None]]
OUTBOX_SHUTDOWN_S = 5.0
"""How long a stopping selector waits for its buffered selection events to reach the stream."""


def create_app(settings: Settings) -> FastStream:
    """The selector app for these settings: nothing is connected or read until it runs."""
    state = SelectorState(Selector(settings, build_catalog([], [], [], settings), embedder=None))
    broker = service_broker(settings, "selector")
    selections = broker.publisher(
        subjects.SELECTION_EVENTS, stream=events_stream(), title="selection-events", schema=SelectionEvent
    )

    async def publish(item: tuple[str, SelectionEvent]) -> None:
        """A retry after a lost ack is stored once: its de-duplication id is made with the event and never leaves
        this process, so no other publisher can claim it first (a selection id is known to its requester)."""
        msg_id, event = item
        await selections.publish(event, headers={"Nats-Msg-Id": msg_id})

    outbox: Outbox[tuple[str, SelectionEvent]] = Outbox(
        publish, settings.selection_buffer_size, settings.selection_publish_batch, settings.selection_retry_max_s
    )
    requests, selects = _requests(state, outbox, lambda: getattr(broker.connection, "max_payload", None))
    broker.include_router(requests)
    broker.include_router(_broadcasts(state))

    @asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        await _start(state, settings)
        outbox.start()
        try:
            yield
        finally:
            await _stop(state)

    app = service_app(broker, "selector", DESCRIPTION, lifespan)

    @app.on_shutdown
    async def flush() -> None:
        """Before the broker closes, so that what is buffered still has a connection to go out on; after the select
        subscriber has stopped (its selects in hand answered, ``TOOLSEL_SHUTDOWN_GRACE_S``), or what it answered
        meanwhile would never be published, and its outcomes and reviews would be dead-lettered as orphans."""
        await selects.stop()
        await outbox.close(OUTBOX_SHUTDOWN_S)

    return app


def _requests(
    state: SelectorState, outbox: Outbox[tuple[str, SelectionEvent]], max_payload: Callable[[], object]
) -> tuple[NatsRouter, LogicSubscriber[Any]]:
    """Select requests (a queue group: copies share them) and health, and the select subscriber (a stopping selector
    stops it first). A reply is cut to what one message of ``max_payload`` bytes (the NATS server's limit) carries,
    less room for its headers.

    The subscriber takes up to ``selects_held`` requests off NATS at once, and ``admission`` lets
    ``select_concurrency`` of them run, taking turns across the requests' tenants (one's burst waits behind
    its own requests, not another's), refusing a tenant's requests past ``select_waiting_per_tenant`` waiting;
    a selection given its turn first lets the requests the NATS client holds for the subscriber come in (for as
    many turns of the event loop as it takes to take in ``selects_held`` of them, two each). Past
    ``selects_held`` the rest wait in the NATS client's buffer for this subscription, first come first served as
    before; past that buffer's own bounds (nats-py's pending limits, 512k messages or 128 MiB) the client drops
    them as a slow consumer and their requesters time out."""
    rpc = rpc_router()
    settings = state.selector.settings
    gate = Admission(
        settings.select_concurrency,
        settings.select_waiting_per_tenant,
        backlog=lambda: _waiting_at_nats(selects),
        intake_turns=2 * settings.selects_held,
    )
    selects = rpc.subscriber(
        subjects.any_scope(subjects.SELECT_ROOT),
        queue=subjects.SELECTOR_QUEUE,
        max_workers=settings.selects_held,
        title="select",
        description=(
            "Select the tools for a query, for the tenant of the sender's scope (the operator's names any); a bad"
            " request gets a typed error reply."
        ),
    )

    @selects
    async def select(request: SelectRequest, msg: NatsMessage) -> SelectReply:
        scope = sender(msg.raw_message.subject, subjects.SELECT_ROOT)
        tenant = tenant_for(scope, request.tenant_id, "tenant_id" in request.model_fields_set)
        if tenant != request.tenant_id:
            request = request.model_copy(update={"tenant_id": tenant})
        async with gate.admitted(tenant):
            started = time.perf_counter()  # the reply's latency is the selection's own, as before, not its turn's
            await _spell_ahead(state, request)
            await _embed_ahead(state, request)
            reply, event = state.selector.select(request, started)
        reply = fit(reply, room(max_payload()))
        state.selections += 1
        if not request.dry_run:  # published after the reply is on its way, never on its critical path
            outbox.put((f"selection:{uuid4()}", offered(event, reply).model_copy(update={"owner": scope.token})))
        return reply

    def health() -> dict[str, int]:
        return {
            "tools": len(state.selector.catalog),
            "catalog_version": state.catalog_version,
            "tool_writes_found_by_check": state.writes_found_by_check,
            "selections": state.selections,
            "selection_events_buffered": len(outbox.queue),
            "selection_events_dropped": outbox.dropped,
            "malformed_events_ignored": state.malformed_events,
            "selects_waiting": gate.waiting,
            "selects_refused": gate.refused,
        }

    add_health(rpc, "selector", health)
    return rpc, selects


def _waiting_at_nats(subscriber: LogicSubscriber[Any]) -> int:
    """Requests the NATS client has received for ``subscriber`` and not yet handed to it (none before it subscribes,
    nor under FastStream's test broker)."""
    return int(getattr(getattr(subscriber, "subscription", None), "pending_msgs", 0))


async def _spell_ahead(state: SelectorState, request: SelectRequest) -> None:
    """A query with a word the spelling stage must search the catalog's words for is repaired in a worker thread
    first, where the selection then finds it kept: among a tenant's hundreds of thousands of words of its own such a
    search takes most of a second, which held the event loop, and with it every other tenant's select."""
    if state.selector.repaired_at_once(request) is None:
        await asyncio.to_thread(state.selector.repaired, request)


async def _embed_ahead(state: SelectorState, request: SelectRequest) -> None:
    """The request's query vectors, computed in a worker thread into the model's cache, with those of the requests
    that arrive with it (``_embedding_batcher``): the model's milliseconds never hold the event loop, and requests
    in flight share the cores. A failure is left to the selection, which
    embeds again and answers with BM25 alone, saying so."""
    queries = state.selector.to_embed(request)
    if not queries or state.batcher is None:
        return
    with contextlib.suppress(Exception):
        await state.batcher.submit((queries[0], queries[1:]))


def _broadcasts(state: SelectorState) -> NatsRouter:
    """What keeps the memory current: the registry, tool states, posteriors and usage vectors as they change,
    and every selection and outcome for each user's history."""
    router = NatsRouter()

    @router.subscriber(subjects.REGISTRY_CHANGED, title="registry-changed")
    async def on_registry_changed(event: RegistryChanged) -> None:
        await _refresh(state, "registry", _load_registry_changes)

    @router.subscriber(subjects.TOOL_STATE_CHANGED, title="tool-state")
    async def on_tool_state(event: ToolStateChanged) -> None:
        await _refresh(state, "standing", _load_standing, lock="registry")

    @router.subscriber(subjects.POSTERIORS_UPDATED, title="posteriors")
    async def on_posteriors(event: PosteriorsUpdated) -> None:
        for u in event.updates:
            state.selector.learn(u.key, u.tenant_id, u.context_key, u.alpha, u.beta, u.last_success_at)

    @router.subscriber(subjects.USAGE_UPDATED, title="usage", description="Fetch the usage vectors changed since.")
    async def on_usage(event: UsageUpdated) -> None:
        if event.version > state.selector.usage.version:
            await _refresh(state, "usage", _load_usage)

    # Core subscriptions to stream subjects: never reply, or the publisher would take the reply for the stream's ack.
    # Their bodies are validated here (``undecoded``): a malformed event is counted and otherwise ignored, where
    # FastStream logged a traceback of each in every selector; the learner dead-letters it.
    @router.subscriber(
        subjects.SELECTION_EVENTS,
        no_reply=True,
        decoder=undecoded,
        title="selections-seen",
        description="For each user's history.",
    )
    async def on_selection_seen(msg: NatsMessage) -> None:
        event = _seen(state, SelectionEvent, msg)
        if event is not None:
            state.selector.history.record_selection(event)

    @router.subscriber(
        subjects.any_scope(subjects.OUTCOME_ROOT),
        no_reply=True,
        decoder=undecoded,
        title="outcomes-seen",
        description="For each user's history.",
    )
    async def on_outcome_seen(msg: NatsMessage) -> None:
        event = _seen(state, OutcomeEvent, msg)
        scope = parse_scope(subjects.scope_of(msg.raw_message.subject, subjects.OUTCOME_ROOT))
        if event is not None and scope is not None:
            state.selector.history.record_outcome(event, scope)

    return router


def _seen(state: SelectorState, kind: type[E], msg: NatsMessage) -> E | None:
    """The event a core subscription received, or None (counted in ``malformed_events``) when it is not one."""
    try:
        return kind.model_validate_json(msg.body)
    except ValidationError:
        state.malformed_events += 1
        return None


async def _refresh(state: SelectorState, source: str, load: Load, lock: str | None = None) -> None:
    """Reload one piece of state, after any reload under way that holds its ``lock`` (its own by default); on
    failure keep serving the copy in memory and say so in replies. A reload asked for while one of the same
    source is still waiting to start is not queued again: the waiting one reads after the change that asked."""
    degraded = state.selector.degraded_sources
    if source in state.waiting:
        return
    state.waiting.add(source)
    try:
        async with state.reloading.setdefault(lock or source, asyncio.Lock()):
            state.waiting.discard(source)
            await load(state)
    except Exception:
        log.exception("reloading %s failed; serving the copy in memory", source)
        degraded.add(f"{source}.stale")
    else:
        degraded.discard(f"{source}.stale")
    finally:
        state.waiting.discard(source)


async def read_catalog(pool: asyncpg.Pool, settings: Settings) -> Catalog:
    """Built in a worker thread: parsing and indexing thousands of tools must not hold up the selections and
    broadcasts waiting on the event loop."""
    tools, evidence = await store.live_tools(pool), await store.tenant_evidence(pool)
    categories, mappings = await store.categories(pool), await store.page_mappings(pool)
    return await asyncio.to_thread(build_catalog, tools, categories, mappings, settings, evidence)


async def _load_registry(state: SelectorState) -> None:
    """A reference swap: requests in flight keep the copy they started with."""
    selector = state.selector
    version = await store.catalog_version(state.store)  # before the tools: the copy holds at least this version
    selector.catalog = await read_catalog(state.store, selector.settings)
    state.catalog_version = version
    selector.rules = build_rules(await store.active_rules(state.store))
    await asyncio.to_thread(release_freed_memory)  # it walks the heap: not on the event loop


async def _load_registry_changes(state: SelectorState) -> None:
    """Only the tools written since the copy's version (and the lookback), less those the copy already holds at
    the same write: a broadcast about a few tools reads and parses those few (``_splice``)."""
    if not state.catalog_version:  # nothing read yet: there is nothing to splice into
        await _load_registry(state)
        return
    selector, pool, settings = state.selector, state.store, state.selector.settings
    version = await store.catalog_version(pool)  # before the tools, as for a whole read
    written = await store.tools_written_since(pool, state.catalog_version, settings.catalog_change_lookback_s)
    live = unseen(selector.catalog, [r for r in written if r["live"]])
    gone = {f"{r['plugin_id']}/{r['name']}" for r in written if not r["live"]}
    await _splice(state, version, live, gone)


async def _recheck_registry(state: SelectorState) -> None:
    """The safety net for a missed broadcast, on the cache TTL: each live tool's last write checked against the
    copy's (``stale_rows``), only the tools that differ read and spliced in, the standing read again. The copy ends
    as a whole read would leave it, for the cost of the keys and what changed: rebuilding ten thousand tools held
    the interpreter for over a second a minute, and the selections waiting on the event loop with it."""
    selector, pool = state.selector, state.store
    version = await store.catalog_version(pool)  # before the tools, as for a whole read
    stale, gone = await asyncio.to_thread(stale_rows, selector.catalog, await store.live_writes(pool))
    if stale or gone:
        log.warning("the periodic check found %d tool writes no broadcast brought", len(stale) + len(gone))
        state.writes_found_by_check += len(stale) + len(gone)
    rows = await store.live_tools_by_id(pool, list(stale)) if stale else []
    gone |= set(stale.values()).difference(f"{r['plugin_id']}/{r['name']}" for r in rows)  # left since the keys
    await _splice(state, version, rows, gone, standing=await store.base_standing(pool))


async def _splice(
    state: SelectorState,
    version: int,
    rows: Sequence[asyncpg.Record],
    gone: set[str],
    standing: Sequence[asyncpg.Record] | None = None,
) -> None:
    """The copy in use spliced into a new one, swapped in whole: ``rows`` in, ``gone`` out, the categories, page
    mappings and tenants' evidence read now, and with ``standing`` (every tool's base standing) the standing too
    (``rechecked``); then the rules. The replaced copy's arrays are given back to the system only when a tool
    changed: with none, the new copy shares them."""
    selector, pool, settings = state.selector, state.store, state.selector.settings
    evidence, categories, mappings = (
        await store.tenant_evidence(pool),
        await store.categories(pool),
        await store.page_mappings(pool),
    )
    cat = selector.catalog
    if standing is None:
        cat = await asyncio.to_thread(with_changes, cat, rows, gone, categories, mappings, settings, evidence)
    else:
        cat = await asyncio.to_thread(rechecked, cat, rows, gone, categories, mappings, standing, evidence, settings)
    selector.catalog = cat
    state.catalog_version = version
    selector.rules = build_rules(await store.active_rules(pool))
    if rows or gone:
        await asyncio.to_thread(release_freed_memory)


async def _load_standing(state: SelectorState) -> None:
    """After a tool's health changed: only the quarantine flags and call statistics, on the catalog copy in
    memory (under the registry's lock, so a registry reload never overtakes it or is overtaken)."""
    selector = state.selector
    base, evidence = await store.base_standing(state.store), await store.tenant_evidence(state.store)
    selector.catalog = await asyncio.to_thread(with_standing, selector.catalog, base, evidence, selector.settings)


async def _load_rules(state: SelectorState) -> None:
    state.selector.rules = build_rules(await store.active_rules(state.store))


async def _load_posteriors(state: SelectorState) -> None:
    """Built in a worker thread, like the catalog: every learnt posterior of every tenant and context."""
    state.selector.learnt = await asyncio.to_thread(build_posteriors, await store.posteriors(state.store))


async def _recheck_posteriors(state: SelectorState) -> None:
    """The safety net for a missed posteriors broadcast, on the cache TTL: the posteriors written in the last two
    periods merged in. The whole table is read again only when the counts then disagree (a rebuild or a forgotten
    plugin deleted some, or a write fell outside the window): read every minute, seventy thousand posteriors held
    the event loop for a quarter of a second to decode and a worker thread for as long again to build."""
    selector, pool, settings = state.selector, state.store, state.selector.settings
    rows = await store.posteriors_since(pool, 2 * settings.tool_list_cache_ttl_s)
    recent = await asyncio.to_thread(build_posteriors, rows)
    if merge_posteriors(selector.learnt, recent) != await store.posterior_count(pool):
        await _load_posteriors(state)


async def _load_usage(state: SelectorState) -> None:
    """Only the usage vectors changed since the watermark: never the whole table again."""
    usage = state.selector.usage
    usage.merge(await store.usage_vectors_since(state.store, usage.version))
    await _index_words(state)


async def _recheck_usage(state: SelectorState) -> None:
    """The safety net: besides what a missed broadcast announced, what a slower transaction committed below
    the watermark (anything updated within two periods). Merging only adds, so when the counts then disagree
    (``toolsel demo --reset`` or a rebuild deleted what was learnt) the memory is read again whole: a running
    selector kept ranking with deleted learnt vectors for good."""
    usage, pool, settings = state.selector.usage, state.store, state.selector.settings
    usage.merge(await store.usage_vectors_since(pool, usage.version, 2 * settings.tool_list_cache_ttl_s))
    if len(usage) == await store.usage_vector_count(pool):
        await _index_words(state)
        return
    fresh = UsageMemory()
    fresh.merge(await store.usage_vectors_since(pool, 0))
    await asyncio.to_thread(fresh.index_words, settings.bm25_k1, settings.bm25_b)
    state.selector.usage = fresh


async def _index_words(state: SelectorState) -> None:
    """In a worker thread: indexing a scope's learnt words must not hold up the selections on the event loop."""
    settings = state.selector.settings
    await asyncio.to_thread(state.selector.usage.index_words, settings.bm25_k1, settings.bm25_b)


async def _load_reviews(state: SelectorState) -> None:
    version = await store.review_index_version(state.store)
    if version != state.reviews_version:
        rows = await store.review_index(state.store)
        dim = state.selector.settings.embedding_dim
        state.selector.reviews = await asyncio.to_thread(build_review_index, rows, dim)  # off the event loop
        state.reviews_version = version


async def _every(state: SelectorState, seconds: float, source: str, load: Load, lock: str | None = None) -> None:
    """The safety net for a missed broadcast: reload on the cache TTL (under ``lock``, as ``_refresh`` takes it)."""
    while True:
        await asyncio.sleep(seconds)
        await _refresh(state, source, load, lock)


async def _start(state: SelectorState, settings: Settings) -> None:
    """Open the store, load the model (without it, BM25 alone), read every source, start the timers. Without
    the catalog there is nothing to serve, so its first read must succeed; the rest may come later."""
    state.pool = await open_store(settings)
    embedder: Embedder | None = None
    try:
        embedder = await load_model(settings)
        embedder.embed_query("warm up")
    except Exception:
        log.exception("the embedding model did not load; answering with BM25 alone")
    selector = state.selector
    selector.embedder = embedder
    state.embedding = ThreadPoolExecutor(settings.embedding_workers, thread_name_prefix="embed")
    if embedder is not None:
        state.batcher = _embedding_batcher(embedder, state.embedding, settings)
    await _load_registry(state)  # the catalog, its version and the rules
    sources: tuple[tuple[str, Load], ...] = (
        ("posteriors", _load_posteriors),
        ("usage", _load_usage),
        ("reviews", _load_reviews),
    )
    for source, load in sources:
        await _refresh(state, source, load)
    freeze_start_up_heap()
    loop = asyncio.get_running_loop()
    state.refreshers = [
        loop.create_task(_every(state, settings.tool_list_cache_ttl_s, "registry", _recheck_registry)),
        # a registry reload reads the rules too: one at a time, or a read from before a new rule could land last
        loop.create_task(_every(state, settings.policy_cache_ttl_s, "rules", _load_rules, lock="registry")),
        loop.create_task(_every(state, settings.tool_list_cache_ttl_s, "posteriors", _recheck_posteriors)),
        loop.create_task(_every(state, settings.tool_list_cache_ttl_s, "usage", _recheck_usage)),
        loop.create_task(_every(state, settings.review_index_refresh_s, "reviews", _load_reviews)),
    ]


def _embedding_batcher(
    embedder: Embedder, workers: Executor, settings: Settings
) -> Batcher[tuple[str, Sequence[str]], list[Matrix]]:
    """Requests' queries embedded together (``Embedder.embed_requests``), in the workers' threads, off the event loop.
    Work-conserving: a request that finds a worker free goes to the model at once, alone (an idle selector adds no
    wait); while every worker runs a batch, requests gather, and the first worker to finish takes them (at most
    ``embedding_batch_size``) in one call, at the model's batch rate. Each request's vectors land in the model's
    cache, where its selection finds them."""
    return Batcher(
        lambda requests: asyncio.get_running_loop().run_in_executor(workers, embedder.embed_requests, requests),
        max_size=settings.embedding_batch_size,
        max_wait_s=0,
        max_in_flight=settings.embedding_workers,
    )


async def _stop(state: SelectorState) -> None:
    for task in state.refreshers:
        task.cancel()
    if state.embedding is not None:
        state.embedding.shutdown(wait=False, cancel_futures=True)
        state.embedding = None
        state.batcher = None
    if state.pool is not None:
        await state.pool.close()
        state.pool = None
