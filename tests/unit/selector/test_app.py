"""The selector app built from given settings and run on FastStream's in-memory broker: the store and the
model are stand-ins, the handlers, lifespan and refresh logic are the real ones."""

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from faststream import TestApp
from faststream.nats import NatsBroker, TestNatsBroker
from pgvector import Vector

from tests.unit.selector.factory import DIM, AxisEmbedder, usage_record
from toolsel.contracts import (
    HealthReply,
    OutcomeEvent,
    PosteriorsUpdated,
    PosteriorUpdate,
    RegistryChanged,
    SelectionEvent,
    SelectReply,
    SelectRequest,
    ToolCall,
    ToolState,
    ToolStateChanged,
    UsageUpdated,
    subjects,
)
from toolsel.contracts.selection import SelectedTool
from toolsel.messaging import events_stream
from toolsel.services.selector import app as selector_app
from toolsel.services.selector import spelling
from toolsel.services.selector.catalog import build_catalog
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings
from toolsel.store import catalog as store


class ThreadedEmbedder(AxisEmbedder):
    """Keeps what it embedded, as the model's query cache does, and in which thread each text was embedded."""

    def __init__(self, keywords: dict[str, int]) -> None:
        super().__init__(keywords)
        self.threads: dict[str, str] = {}

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[Any]:
        for text in (query, *parts):
            self.threads.setdefault(text, threading.current_thread().name)
        return super().embed_request(query, parts)

    def cached(self, query: str, parts: Sequence[str] = ()) -> bool:
        return all(text in self.threads for text in (query, *parts))


REPLY_WAIT_S = 30.0
"""How long a test waits for a reply: the handler's embedding runs in a worker thread that a loaded CI machine can
hold past the broker's default half second."""
STANDING = ("quarantined", "rating_sum", "rating_count", "calls", "failures", "latency_sum_ms", "latency_count")
"""The columns of a tool's standing (``store.STANDING_COLUMNS``)."""


def tool_row(name: str, description: str, axis: int) -> dict[str, Any]:
    """A row of ``store.LIVE_TOOLS`` as PostgreSQL would return it."""
    vector = [0.0] * DIM
    vector[axis] = 1.0
    return {
        "id": axis,
        "plugin_id": "p",
        "name": name,
        "tenant_id": "*",
        "category": None,
        "spec": json.dumps({"name": name, "description": description, "parameters": {"type": "object"}}),
        "embedding": Vector(vector),
        "is_always_pinned": False,
        "pin_weight": 0,
        "written": 1,
        "quarantined": False,
        "rating_sum": None,
        "rating_count": None,
        "calls": None,
        "failures": None,
        "latency_sum_ms": None,
        "latency_count": None,
    }


@dataclass
class FakeStore:
    """Answers the selector's named queries from rows the test sets; ``down`` makes every read fail."""

    rows: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    down: bool = False
    closed: bool = False
    reads: list[str] = field(default_factory=list)
    """The queries read, in order."""
    ids_read: list[int] = field(default_factory=list)
    """The tools read by id (``LIVE_TOOLS_BY_ID``)."""

    async def fetch(self, sql: str, *args: object) -> list[Mapping[str, Any]]:
        if self.down:
            raise ConnectionError("the store is down")
        self.reads.append(sql)
        live = self.rows.get(store.LIVE_TOOLS, [])
        if sql == store.TOOLS_WRITTEN_SINCE and sql not in self.rows:  # as if every live tool had just been written
            return [row | {"live": True} for row in live]
        if sql == store.LIVE_WRITES:
            return [{"id": r["id"], "key": f"{r['plugin_id']}/{r['name']}", "written": r["written"]} for r in live]
        if sql == store.LIVE_TOOLS_BY_ID:
            (ids,) = args
            self.ids_read.extend(ids)  # type: ignore[arg-type]
            return [r for r in live if r["id"] in ids]  # type: ignore[operator]
        return self.rows.get(sql, [])

    async def fetchval(self, sql: str) -> int:
        counted = {
            store.CATALOG_VERSION: store.LIVE_TOOLS,
            store.POSTERIOR_COUNT: store.POSTERIORS,
            store.USAGE_VECTOR_COUNT: store.USAGE_VECTORS_SINCE,  # the fake's usage rows stand for the whole table
        }
        assert sql in counted
        if self.down:
            raise ConnectionError("the store is down")
        self.reads.append(sql)
        return len(self.rows.get(counted[sql], []))

    async def fetchrow(self, sql: str) -> tuple[int, int, int]:
        assert sql == store.REVIEW_INDEX_VERSION
        return len(self.rows.get(store.REVIEW_INDEX, [])), 0, 0

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_store(monkeypatch: pytest.MonkeyPatch) -> FakeStore:
    fake = FakeStore({store.LIVE_TOOLS: [tool_row("send_email", "send an email", 0)]})

    async def open_store(settings: Settings) -> FakeStore:
        return fake

    async def load_model(settings: Settings, *, cache: bool = True) -> AxisEmbedder:
        return ThreadedEmbedder({"email": 0, "weather": 1, "flight": 2})

    monkeypatch.setattr(selector_app, "open_store", open_store)
    monkeypatch.setattr(selector_app, "load_model", load_model)
    return fake


@pytest.fixture
def recorded() -> list[SelectionEvent]:
    """The selection events the app published."""
    return []


@pytest.fixture
def settings() -> Settings:
    return Settings(
        nats_url="nats://in-memory:4222",
        thompson_sampling=False,
        exploration_slots=0,
        context_key_template="{tier}:{page}:general",  # context keys these tests can name
    )


@pytest.fixture
async def broker(
    settings: Settings, fake_store: FakeStore, recorded: list[SelectionEvent]
) -> AsyncIterator[NatsBroker]:
    app = selector_app.create_app(settings)

    @app.broker.subscriber(subjects.SELECTION_EVENTS, stream=events_stream())  # as the learner consumes them
    async def record(event: SelectionEvent) -> None:
        recorded.append(event)

    async with TestNatsBroker(app.broker) as test_broker, TestApp(app):
        yield test_broker
    assert fake_store.closed


async def select(broker: NatsBroker, **request: Any) -> SelectReply:
    response = await broker.request(SelectRequest(**request), subjects.SELECT, timeout=REPLY_WAIT_S)
    return SelectReply.model_validate_json(response.body)


async def test_select_answers_from_the_catalog_read_at_start(broker: NatsBroker) -> None:
    reply = await select(broker, query="send an email", k=1, dry_run=True)
    assert [t.name for t in reply.tools] == ["send_email"]
    assert reply.method == "hybrid"
    assert reply.degraded == []


async def test_a_bad_request_gets_a_typed_error_reply(broker: NatsBroker) -> None:
    response = await broker.request({"query": "", "k": 0}, subjects.SELECT, timeout=REPLY_WAIT_S)
    assert json.loads(response.body)["error"]["code"] == "invalid_request"


async def test_the_selection_event_is_published_unless_a_dry_run(
    broker: NatsBroker, recorded: list[SelectionEvent]
) -> None:
    await select(broker, query="send an email", k=1, dry_run=True)
    reply = await select(broker, query="send an email", k=1)
    for _ in range(100):
        if recorded:
            break
        await asyncio.sleep(0.01)
    assert [e.selection_id for e in recorded] == [reply.selection_id]
    asked = await broker.request(None, subjects.health("selector"), timeout=REPLY_WAIT_S)
    health = HealthReply.model_validate_json(asked.body)
    assert health.details == {
        "tools": 1,
        "catalog_version": 1,
        "tool_writes_found_by_check": 0,
        "selections": 2,
        "selection_events_buffered": 0,
        "selection_events_dropped": 0,
        "malformed_events_ignored": 0,
        "selects_waiting": 0,
        "selects_refused": 0,
    }


async def test_a_registry_broadcast_splices_in_the_tools_written_since_the_copy(
    broker: NatsBroker, fake_store: FakeStore
) -> None:
    weather = tool_row("get_weather", "weather forecast for a city", 1)
    fake_store.rows[store.LIVE_TOOLS] = [weather]  # the registry's version moves on
    fake_store.rows[store.TOOLS_WRITTEN_SINCE] = [
        weather | {"live": True},
        tool_row("send_email", "send an email", 0) | {"live": False},  # deleted
    ]
    assert [t.name for t in (await select(broker, query="weather", k=5, dry_run=True)).tools] == ["send_email"]
    await broker.publish(RegistryChanged(plugin_id="p", reason="sync"), subjects.REGISTRY_CHANGED)
    reply = await select(broker, query="weather in Oslo", k=5, dry_run=True)
    assert [t.name for t in reply.tools] == ["get_weather"]
    assert fake_store.reads.count(store.LIVE_TOOLS) == 1  # the whole catalog read at start only


@pytest.mark.parametrize(
    "settings",
    [Settings(nats_url="nats://in-memory:4222", thompson_sampling=False, tool_list_cache_ttl_s=0.05)],
)
async def test_the_periodic_check_reads_only_the_tools_whose_write_the_copy_lacks(
    broker: NatsBroker, fake_store: FakeStore
) -> None:
    """A missed broadcast: the timer's check finds the new, rewritten and deleted tools by their last write alone
    and reads those, never the whole catalog again."""
    kept, edited = tool_row("send_email", "send an email", 0), tool_row("get_weather", "weather forecast", 1)
    fake_store.rows[store.LIVE_TOOLS] = [kept, edited | {"id": 7}]
    for _ in range(100):  # the new tool, read by the next check
        if fake_store.ids_read:
            break
        await asyncio.sleep(0.01)
    assert fake_store.ids_read == [7]
    fake_store.rows[store.LIVE_TOOLS] = [
        edited | {"id": 7, "written": 2, "spec": edited["spec"].replace("weather forecast", "flight booking")},
        tool_row("book_flight", "book a flight", 2) | {"id": 8},
    ]  # send_email deleted, get_weather rewritten, book_flight new
    for _ in range(100):
        if len(fake_store.ids_read) > 1:
            break
        await asyncio.sleep(0.01)
    assert sorted(fake_store.ids_read[1:]) == [7, 8]
    reply = await select(broker, query="an email, a weather forecast or a flight", k=5, dry_run=True)
    assert sorted(t.name for t in reply.tools) == ["book_flight", "get_weather"]
    assert reply.tools[0].breakdown is not None
    assert fake_store.reads.count(store.LIVE_TOOLS) == 1  # the whole catalog read at start only
    fake_store.ids_read.clear()
    await asyncio.sleep(0.2)  # several checks with nothing changed read no tool
    assert fake_store.ids_read == []
    health = HealthReply.model_validate_json((await broker.request(None, subjects.health("selector"))).body)
    assert health.details["tool_writes_found_by_check"] == 4  # book_flight and get_weather new, rewritten, one gone


async def test_a_broadcast_splices_only_the_tools_whose_write_the_copy_lacks() -> None:
    """The lookback reads again what was written just before the copy's version (during a sync of thousands of
    tools, most of it): those the copy holds at the same write are not spliced again, and with none left the copy
    keeps its indexes."""
    settings = Settings()
    email, weather = tool_row("send_email", "send an email", 0), tool_row("get_weather", "weather forecast", 1)
    state = selector_app.SelectorState(Selector(settings, build_catalog([email], [], [], settings), embedder=None))
    state.pool, state.catalog_version = FakeStore({store.LIVE_TOOLS: [email]}), 1  # type: ignore[assignment]
    before = state.selector.catalog

    await selector_app._load_registry_changes(state)  # the lookback reads send_email again, at the same write

    assert state.selector.catalog.lexical is before.lexical

    state.pool = FakeStore({store.LIVE_TOOLS: [email, weather | {"written": 2}]})  # type: ignore[assignment]
    await selector_app._load_registry_changes(state)

    assert state.selector.catalog.keys == ["p/get_weather", "p/send_email"]
    assert state.selector.catalog.lexical is not before.lexical


async def test_a_failed_reload_keeps_the_copy_and_says_it_is_stale(broker: NatsBroker, fake_store: FakeStore) -> None:
    fake_store.down = True
    await broker.publish(RegistryChanged(plugin_id="p", reason="sync"), subjects.REGISTRY_CHANGED)
    reply = await select(broker, query="send an email", k=1, dry_run=True)
    assert reply.degraded == ["registry.stale"]
    assert [t.name for t in reply.tools] == ["send_email"]
    fake_store.down = False
    await broker.publish(RegistryChanged(plugin_id="p", reason="sync"), subjects.REGISTRY_CHANGED)
    assert (await select(broker, query="send an email", k=1, dry_run=True)).degraded == []


async def test_a_tool_state_broadcast_rereads_the_standing_alone(broker: NatsBroker, fake_store: FakeStore) -> None:
    """A quarantine reaches the next answer of the tenant it holds for, without rebuilding the catalog."""
    quarantined = {k: v for k, v in tool_row("send_email", "send an email", 0).items() if k in STANDING}
    fake_store.rows[store.TENANT_EVIDENCE] = [
        quarantined | {"key": "p/send_email", "tenant_id": "acme", "quarantined": True}
    ]
    fake_store.reads.clear()
    await broker.publish(
        ToolStateChanged(plugin_id="p", name="send_email", tenant_id="acme", state=ToolState.QUARANTINED),
        subjects.TOOL_STATE_CHANGED,
    )
    assert (await select(broker, query="send an email", tenant_id="acme", k=1, dry_run=True)).tools == []
    assert [
        t.name for t in (await select(broker, query="send an email", tenant_id="globex", k=1, dry_run=True)).tools
    ] == ["send_email"]
    assert store.LIVE_TOOLS not in fake_store.reads
    assert {store.BASE_STANDING, store.TENANT_EVIDENCE} <= set(fake_store.reads)


async def test_posterior_broadcasts_are_learnt(broker: NatsBroker) -> None:
    update = PosteriorUpdate(
        plugin_id="p",
        name="send_email",
        tenant_id="acme",
        context_key="free:*:general",
        alpha=9.0,
        beta=2.0,
        last_success_at=datetime.now(UTC),
    )
    await broker.publish(PosteriorsUpdated(updates=[update]), subjects.POSTERIORS_UPDATED)
    mine = (await select(broker, query="send an email", k=1, dry_run=True, tenant_id="acme")).tools[0].breakdown
    assert (mine.alpha, mine.beta) == (9.0, 2.0)
    assert mine.recency == pytest.approx(1.0, abs=1e-3)
    theirs = (await select(broker, query="send an email", k=1, dry_run=True, tenant_id="other")).tools[0].breakdown
    assert (theirs.alpha, theirs.beta, theirs.recency) == (1.0, 1.0, 0.0)


CHECKED_OFTEN = Settings(
    nats_url="nats://in-memory:4222",
    thompson_sampling=False,
    tool_list_cache_ttl_s=0.05,
    context_key_template="{tier}:{page}:general",
)
"""A selector whose periodic checks run every 50 ms."""


def posterior_row(alpha: float, tenant: str = "acme") -> dict[str, Any]:
    """A row of ``store.POSTERIORS`` for send_email in the tests' context."""
    return {
        "key": "p/send_email",
        "tenant_id": tenant,
        "context_key": "free:*:general",
        "alpha": alpha,
        "beta": 1.0,
        "last_success_at": None,
    }


@pytest.mark.parametrize("settings", [CHECKED_OFTEN])
async def test_the_periodic_check_merges_the_recent_posteriors_and_reads_them_all_only_when_counts_disagree(
    broker: NatsBroker, fake_store: FakeStore
) -> None:
    async def alpha(tenant: str) -> float:
        reply = await select(broker, query="send an email", k=1, dry_run=True, tenant_id=tenant)
        return reply.tools[0].breakdown.alpha

    async def eventually_alpha(tenant: str, wanted: float) -> float:
        for _ in range(100):
            if (seen := await alpha(tenant)) == wanted:
                break
            await asyncio.sleep(0.01)
        return seen

    fake_store.rows[store.POSTERIORS] = [posterior_row(3.0)]  # a broadcast missed: the check finds it
    fake_store.rows[store.POSTERIORS_SINCE] = [posterior_row(3.0)]
    assert await eventually_alpha("acme", 3.0) == 3.0
    fake_store.reads.clear()
    await asyncio.sleep(0.2)  # the counts agree: the whole table is not read again
    assert store.POSTERIOR_COUNT in fake_store.reads
    assert store.POSTERIORS not in fake_store.reads

    fake_store.rows[store.POSTERIORS] = [posterior_row(2.0, tenant="other")]  # acme's deleted (a rebuild)
    fake_store.rows[store.POSTERIORS_SINCE] = [posterior_row(2.0, tenant="other")]
    assert await eventually_alpha("acme", 1.0) == 1.0  # the prior again
    assert store.POSTERIORS in fake_store.reads
    assert await alpha("other") == 2.0


async def mail_and_weather(broker: NatsBroker, fake_store: FakeStore) -> None:
    """The store holds send_email and get_weather, and the selector has been told so."""
    fake_store.rows[store.LIVE_TOOLS] = [
        tool_row("send_email", "send an email", 0),
        tool_row("get_weather", "weather forecast for a city", 1),
    ]
    await broker.publish(RegistryChanged(plugin_id="p", reason="sync"), subjects.REGISTRY_CHANGED)


def usage_row(name: str, axis: int, version: int, scope: str = "acme") -> dict[str, Any]:
    """The tool learnt queries along ``axis``."""
    return usage_record(f"p/{name}", axis, version, scope)


async def test_a_usage_broadcast_fetches_what_changed_since_the_watermark(
    broker: NatsBroker, fake_store: FakeStore
) -> None:
    await mail_and_weather(broker, fake_store)
    # the tenant's weather queries were answered by send_email: usage teaches it the weather axis
    fake_store.rows[store.USAGE_VECTORS_SINCE] = [usage_row("send_email", 1, version=3)]
    await broker.publish(UsageUpdated(version=3, tools=1), subjects.USAGE_UPDATED)
    learnt = 0.7 / (0.3**2 + 0.7**2) ** 0.5  # cos(weather, normalize(0.3 x declared + 0.7 x centroid))
    assert await similarity(broker, "acme") == pytest.approx(learnt, abs=1e-6)
    assert await similarity(broker, "other") == 0.0
    fake_store.rows[store.USAGE_VECTORS_SINCE] = [usage_row("send_email", 0, version=2)]  # older: changes nothing
    await broker.publish(UsageUpdated(version=4, tools=1), subjects.USAGE_UPDATED)
    assert await similarity(broker, "acme") == pytest.approx(learnt, abs=1e-6)


async def test_a_usage_broadcast_brings_the_words_a_tool_was_asked_for_with_in_its_tenant_only(
    broker: NatsBroker, fake_store: FakeStore
) -> None:
    await mail_and_weather(broker, fake_store)
    fake_store.rows[store.USAGE_VECTORS_SINCE] = [
        usage_row("send_email", 0, version=3) | {"words": ["where is my parcel", "track my parcel"]}
    ]
    await broker.publish(UsageUpdated(version=3, tools=1), subjects.USAGE_UPDATED)

    async def relevance(tenant: str) -> float:
        reply = await select(broker, query="track the parcel weather", k=2, dry_run=True, tenant_id=tenant)
        return next(t.breakdown.relevance for t in reply.tools if t.name == "send_email")

    assert await relevance("acme") > 0
    assert await relevance("other") == 0.0


@pytest.mark.parametrize("settings", [CHECKED_OFTEN])
async def test_the_periodic_check_forgets_learnt_vectors_the_store_deleted(
    broker: NatsBroker, fake_store: FakeStore
) -> None:
    """``toolsel demo --reset`` and a rebuild delete learnt vectors and announce nothing: a running selector kept
    ranking with them for good, since merging only adds."""
    await mail_and_weather(broker, fake_store)
    fake_store.rows[store.USAGE_VECTORS_SINCE] = [usage_row("send_email", 1, version=3)]
    await broker.publish(UsageUpdated(version=3, tools=1), subjects.USAGE_UPDATED)
    assert await similarity(broker, "acme") > 0.5
    fake_store.rows[store.USAGE_VECTORS_SINCE] = []  # deleted in the store
    for _ in range(100):
        if await similarity(broker, "acme") == 0.0:
            break
        await asyncio.sleep(0.01)
    assert await similarity(broker, "acme") == 0.0  # the declared vector alone again


async def similarity(broker: NatsBroker, tenant: str) -> float:
    """send_email's cosine with a weather query for this tenant."""
    reply = await select(broker, query="weather", k=2, dry_run=True, tenant_id=tenant)
    return next(t.breakdown.similarity for t in reply.tools if t.name == "send_email")


async def test_reloads_of_one_source_never_overlap_so_the_last_read_wins() -> None:
    """A slow reload that started first must not overwrite what a later one read (a broadcast of a tool's
    quarantine during a periodic reload)."""
    settings = Settings()
    state = selector_app.SelectorState(Selector(settings, build_catalog([], [], [], settings), embedder=None))
    reads: list[str] = []
    version = {"now": "before"}

    async def load(state: selector_app.SelectorState) -> None:
        read = version["now"]
        await asyncio.sleep(0.05 if read == "before" else 0.0)
        reads.append(read)

    first = asyncio.create_task(selector_app._refresh(state, "registry", load))
    await asyncio.sleep(0)
    version["now"] = "after"
    await selector_app._refresh(state, "registry", load)
    await first
    assert reads == ["before", "after"]


async def test_a_burst_of_broadcasts_costs_one_more_reload_not_one_each() -> None:
    settings = Settings()
    state = selector_app.SelectorState(Selector(settings, build_catalog([], [], [], settings), embedder=None))
    started = asyncio.Event()
    loads: list[int] = []

    async def load(state: selector_app.SelectorState) -> None:
        loads.append(len(loads))
        started.set()
        await asyncio.sleep(0.05)

    running = asyncio.create_task(selector_app._refresh(state, "standing", load, lock="registry"))
    await started.wait()
    burst = [asyncio.create_task(selector_app._refresh(state, "standing", load, lock="registry")) for _ in range(5)]
    await asyncio.gather(running, *burst)
    assert loads == [0, 1]  # the one running, then one that reads after every change of the burst
    assert state.waiting == set()


@pytest.mark.parametrize("settings", [Settings(nats_url="nats://in-memory:4222", thompson_sampling=False)])
async def test_a_query_is_embedded_in_a_worker_thread_while_other_requests_are_answered(
    broker: NatsBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[ThreadedEmbedder] = []
    holding, release = threading.Event(), threading.Event()
    embed_request = ThreadedEmbedder.embed_request

    def held(self: ThreadedEmbedder, query: str, parts: Sequence[str] = ()) -> list[Any]:
        """The model, held on the slow request until the test lets it go."""
        seen.append(self)
        if "slow" in query:
            holding.set()
            assert release.wait(10)
        return embed_request(self, query, parts)

    monkeypatch.setattr(ThreadedEmbedder, "embed_request", held)
    slow = asyncio.create_task(select(broker, query="a slow email to Oslo", k=1, dry_run=True))
    assert await asyncio.to_thread(holding.wait, 10)  # the slow one's embedding holds a worker from here on
    quick = await asyncio.wait_for(select(broker, query="send an email to Bergen", k=1, dry_run=True), 5)
    assert not slow.done()  # answered while the other's embedding was still running
    release.set()
    reply = await asyncio.wait_for(slow, 5)
    assert reply.method == quick.method == "hybrid"  # both used their vectors
    assert reply.latency_ms >= quick.latency_ms  # the slow one's wait for the model counts in its latency
    threads = seen[0].threads
    assert threads["a slow email to Oslo"].startswith("embed")  # the app's worker, not the event loop's thread
    assert threads["send an email to Bergen"].startswith("embed")


@pytest.mark.parametrize(
    "settings", [Settings(nats_url="nats://in-memory:4222", thompson_sampling=False, embedding_workers=1)]
)
async def test_requests_that_arrive_while_the_model_is_busy_are_embedded_in_one_model_call(
    broker: NatsBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[list[str]] = []
    embed_requests = ThreadedEmbedder.embed_requests

    def counted(self: ThreadedEmbedder, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[Any]]:
        batches.append([query for query, _ in requests])
        if len(batches) == 1:
            time.sleep(0.3)  # the model busy with the first while the others arrive
        return embed_requests(self, requests)

    monkeypatch.setattr(ThreadedEmbedder, "embed_requests", counted)
    queries = ["send an email to Bergen", "the weather in Oslo", "a flight to Rome"]
    replies = await asyncio.wait_for(asyncio.gather(*(select(broker, query=q, k=1, dry_run=True) for q in queries)), 5)
    assert [r.tools[0].name for r in replies] == ["send_email"] * 3
    assert sorted(q for batch in batches for q in batch) == sorted(queries)
    assert len(batches) < len(queries)  # not one call each


@pytest.mark.parametrize(
    "settings",
    [
        Settings(
            nats_url="nats://in-memory:4222", thompson_sampling=False, select_concurrency=1, select_waiting_per_tenant=1
        )
    ],
)
async def test_a_select_past_its_identitys_waiting_bound_is_refused_and_counted_in_the_health(
    broker: NatsBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    holding, release = threading.Event(), threading.Event()
    embed_requests = ThreadedEmbedder.embed_requests

    def held(self: ThreadedEmbedder, requests: Sequence[tuple[str, Sequence[str]]]) -> list[list[Any]]:
        """The model, held on the first request (the one selection running) until the test lets it go."""
        if any("slow" in query for query, _ in requests):
            holding.set()
            assert release.wait(10)
        return embed_requests(self, requests)

    async def health() -> dict[str, Any]:
        asked = await broker.request(None, subjects.health("selector"), timeout=REPLY_WAIT_S)
        return HealthReply.model_validate_json(asked.body).details

    monkeypatch.setattr(ThreadedEmbedder, "embed_requests", held)
    running = asyncio.create_task(select(broker, query="a slow email to Oslo", k=1, dry_run=True))
    assert await asyncio.to_thread(holding.wait, 10)  # it holds the one turn from here on
    waiting = asyncio.create_task(select(broker, query="send an email to Bergen", k=1, dry_run=True))
    for _ in range(100):  # until it waits at the gate (the in-memory broker's requests never yield to it)
        await asyncio.sleep(0.01)
        if (await health())["selects_waiting"] == 1:
            break
    response = await broker.request(SelectRequest(query="an email", k=1, dry_run=True), subjects.SELECT)
    assert json.loads(response.body)["error"]["code"] == "rate_limited"
    details = await health()
    release.set()
    assert (details["selects_waiting"], details["selects_refused"]) == (1, 1)
    replies = await asyncio.wait_for(asyncio.gather(running, waiting), 5)
    assert [r.tools[0].name for r in replies] == ["send_email"] * 2
    details = await health()
    assert (details["selects_waiting"], details["selects_refused"]) == (0, 1)


async def test_a_malformed_event_followed_for_the_users_history_changes_nothing_and_is_counted_without_a_traceback(
    fake_store: FakeStore, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(nats_url="nats://in-memory:4222", thompson_sampling=False, rerank_weights={"user_history": 1})
    app = selector_app.create_app(settings)  # no recorder of the selection events: it would refuse the malformed
    made = SelectionEvent(
        tenant_id="acme",
        user_id="alice",
        query="send an email",
        tier="free",
        context_key="free:*:general",
        method="hybrid",
        tools=[SelectedTool(plugin_id="p", name="send_email", rank=0, score=1.0)],
        candidate_count=1,
        latency_ms=1,
        tokens_selected=1,
        tokens_catalog=1,
    )
    bad_calls = json.dumps({"selection_id": str(made.selection_id), "calls": [{"name": "send_email"}]}).encode()
    malformed = [b"{}", b"[]", b"\xff", b"{" * 2000, bad_calls]
    async with TestNatsBroker(app.broker) as broker, TestApp(app):

        async def alices_rate() -> float:
            reply = await select(broker, query="send an email", k=1, tenant_id="acme", user_id="alice", dry_run=True)
            return reply.tools[0].breakdown.user_history

        await broker.publish(made, subjects.SELECTION_EVENTS)
        with caplog.at_level(logging.DEBUG):
            for body in malformed:
                await broker.publish(body, subjects.OUTCOME_EVENTS)
                await broker.publish(body, subjects.SELECTION_EVENTS)
        assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING] == []
        health = HealthReply.model_validate_json((await broker.request(None, subjects.health("selector"))).body)
        assert health.details["malformed_events_ignored"] == 2 * len(malformed)
        assert await alices_rate() == 0.0
        called = ToolCall(plugin_id="p", name="send_email", success=True)
        await broker.publish(OutcomeEvent(selection_id=made.selection_id, calls=[called]), subjects.OUTCOME_EVENTS)
        assert await alices_rate() == 1.0  # her selection was still awaited, untouched by the malformed outcome


async def test_a_query_whose_repair_takes_a_search_is_repaired_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spelling stage's search of the catalog's words (up to a second among a tenant's own vast vocabulary) runs
    in a worker thread ahead of the selection, which finds the repair kept; a query that takes none stays on the
    loop."""
    settings = Settings()
    rows = [tool_row("get_weather", "weather forecast for the week", 0), tool_row("send_email", "send an email", 1)]
    state = selector_app.SelectorState(Selector(settings, build_catalog(rows, [], [], settings), embedder=None))
    searched_on: list[str] = []
    search = spelling.nearest_word

    def recorded(*args: Any, **kwargs: Any) -> str | None:
        searched_on.append(threading.current_thread().name)
        return search(*args, **kwargs)

    monkeypatch.setattr(spelling, "nearest_word", recorded)
    await selector_app._spell_ahead(state, SelectRequest(query="send an email", tenant_id="acme"))
    assert searched_on == []
    misspelt = SelectRequest(query="wheather forcast", tenant_id="acme")
    await selector_app._spell_ahead(state, misspelt)
    assert searched_on
    assert threading.main_thread().name not in searched_on
    assert state.selector.repaired_at_once(misspelt) == "weather forecast"  # kept for the selection
