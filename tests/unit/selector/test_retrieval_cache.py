"""The hot-query cache: kept only while its sources are the very copies held, least recently used out first,
and never holding a replaced copy alive; and over a whole selector, a repeated query answered from it until
the catalog, the review index or what was learnt changes."""

import gc
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest

from tests.unit.selector.factory import DIM, AxisEmbedder, T, catalog
from tests.unit.selector.test_selector import EMBED, TOOLS, selector, usage_row
from toolsel.contracts import SelectRequest
from toolsel.services.selector.catalog import ReviewIndex
from toolsel.services.selector.retrieval_cache import RetrievalCache, freeze, pool_digest
from toolsel.services.selector.selector import Selector


@dataclass(eq=True)
class Copy:
    """A stand-in for a catalog copy: two copies may be equal and still be two."""

    version: int


def test_an_entry_is_used_only_with_the_very_sources_it_was_computed_from() -> None:
    cache: RetrievalCache[str] = RetrievalCache(4)
    first, view = Copy(1), Copy(7)
    cache.put("q", (first, None, view), "kept")
    assert cache.get("q", (first, None, view)) == "kept"
    assert cache.get("q", (Copy(1), None, view)) is None  # equal, but a new copy
    assert len(cache) == 0  # the stale entry is gone
    cache.put("q", (first, None, view), "kept")
    assert cache.get("q", (first, view, view)) is None


def test_the_least_recently_used_entry_leaves_first() -> None:
    cache: RetrievalCache[int] = RetrievalCache(2)
    source = Copy(1)
    cache.put("a", (source,), 1)
    cache.put("b", (source,), 2)
    assert cache.get("a", (source,)) == 1
    cache.put("c", (source,), 3)
    assert cache.get("b", (source,)) is None
    assert (cache.get("a", (source,)), cache.get("c", (source,))) == (1, 3)


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    cache: RetrievalCache[int] = RetrievalCache(0)
    cache.put("a", (), 1)
    assert cache.get("a", ()) is None
    with pytest.raises(ValueError, match="size must be"):
        RetrievalCache(-1)


def test_an_entry_does_not_keep_a_replaced_copy_alive() -> None:
    cache: RetrievalCache[int] = RetrievalCache(4)
    old = Copy(1)
    cache.put("q", (old,), 1)
    gone = weakref.ref(old)
    del old
    gc.collect()
    assert gone() is None
    assert cache.get("q", (Copy(1),)) is None


def test_pool_digest_tells_pools_apart_and_frozen_arrays_refuse_writes() -> None:
    pool = np.array([True, False, True])
    assert pool_digest(pool) == pool_digest(pool.copy())
    assert pool_digest(pool) != pool_digest(np.array([True, True, True]))
    values = np.zeros(3)
    freeze(values)
    with pytest.raises(ValueError, match="read-only"):
        values[0] = 1.0


class CountingEmbedder(AxisEmbedder):
    """Counts the texts it embeds: a cached retrieval embeds nothing."""

    def __init__(self, keywords: dict[str, int]) -> None:
        super().__init__(keywords)
        self.embedded = 0

    def embed_request(self, query: str, parts: Sequence[str] = ()) -> list[npt.NDArray[np.float32]]:
        self.embedded += 1 + len(parts)
        return super().embed_request(query, parts)


def counted(sel: Selector) -> CountingEmbedder:
    embedder = CountingEmbedder(EMBED.keywords)
    sel.embedder = embedder
    return embedder


def top(sel: Selector, query: str, tenant: str = "default") -> list[str]:
    reply, _ = sel.select(SelectRequest(query=query, k=3, tenant_id=tenant, rerank=True))
    return [t.name for t in reply.tools if not t.pinned]


def test_a_repeated_query_reuses_its_retrieval_and_answers_the_same() -> None:
    sel = selector()
    embedder = counted(sel)
    first = top(sel, "weather forecast")
    assert embedder.embedded == 1
    assert top(sel, "weather forecast") == first
    assert embedder.embedded == 1
    assert top(sel, "email an invoice") != first
    assert embedder.embedded == 2


def test_a_new_catalog_copy_is_retrieved_anew() -> None:
    sel = selector()
    embedder = counted(sel)
    assert top(sel, "weather forecast")[0] == "get_weather"
    sel.catalog = catalog([t for t in TOOLS if t.name != "get_weather"])
    assert "get_weather" not in top(sel, "weather forecast")
    assert embedder.embedded == 2


def test_what_a_scope_learns_reaches_its_next_identical_query() -> None:
    sel = selector(fusion_weights={"bm25": 0.0})
    before = top(sel, "weather", tenant="acme")
    sel.usage.merge([usage_row("book_hotel", "acme", 2, version=1)])  # book_hotel learnt for weather queries
    after = top(sel, "weather", tenant="acme")
    assert "book_hotel" not in before[:2]
    assert "book_hotel" in after[:2]


def test_a_new_review_index_is_read_by_the_next_identical_query() -> None:
    sel = selector(fusion_weights={"vector": 1.0, "bm25": 2.0, "history": 1.0})  # history feeds retrieval

    def relevance_of_send_email() -> float:
        reply, _ = sel.select(SelectRequest(query="weather", k=6, rerank=False))
        return next(t.breakdown.relevance for t in reply.tools if t.name == "send_email")

    before = relevance_of_send_email()
    centroids = np.zeros((1, DIM), dtype=np.float32)
    centroids[0, 2] = 1.0  # past weather queries were served well by send_email
    sel.reviews = ReviewIndex(["p/send_email"], centroids, np.full(1, 1.4), np.full(1, "default"))
    assert relevance_of_send_email() > before


def test_a_new_review_index_keeps_the_cached_retrieval_when_retrieval_does_not_read_it() -> None:
    sel = selector()  # by default the review index weighs nothing in retrieval (the rerank's fitness reads it)
    assert "retrieve" in sel.run(SelectRequest(query="weather", k=3)).stages_ms
    centroids = np.zeros((1, DIM), dtype=np.float32)
    sel.reviews = ReviewIndex(["p/send_email"], centroids, np.full(1, 1.4), np.full(1, "default"))
    assert "retrieve" not in sel.run(SelectRequest(query="weather", k=3)).stages_ms


def test_the_same_query_with_other_visible_rows_is_retrieved_anew() -> None:
    sel = selector()
    query = "weather forecast for a hotel"
    assert top(sel, query)[0] == "get_weather"
    reply, _ = sel.select(SelectRequest(query=query, k=3, filters={"categories": ["travel"]}))
    best = reply.tools[1]  # after the pin
    assert best.name == "book_hotel"
    assert best.breakdown.relevance == pytest.approx(1.0)  # scaled over its own pool, not the first request's


def test_one_tenant_s_cached_retrieval_never_answers_another_tenant() -> None:
    tools = [
        T("acme_weather", "weather for acme", 2, tenant="acme"),
        T("globex_weather", "weather", 2, tenant="globex"),
    ]
    sel = Selector(selector().settings, catalog(tools), CountingEmbedder(EMBED.keywords))
    assert top(sel, "weather", tenant="acme") == ["acme_weather"]
    assert top(sel, "weather", tenant="globex") == ["globex_weather"]


def test_a_repeated_query_reuses_its_candidates_for_requests_that_read_them_alike() -> None:
    sel = selector()
    weather = SelectRequest(query="weather forecast", k=3)
    first = sel.run(weather)
    assert "candidates" in first.stages_ms
    again = sel.run(weather.model_copy(update={"k": 2, "seed": 7}))  # count and draws read the candidates alike
    assert "candidates" not in again.stages_ms
    assert again.candidates is first.candidates
    for other in ({"page": "/mail"}, {"tier": "pro"}, {"rerank": False}):
        moved = sel.run(weather.model_copy(update=other))  # the bandit context or the rows read differ
        assert "candidates" in moved.stages_ms, other
        assert moved.candidates.context_key != first.candidates.context_key or other == {"rerank": False}


def test_cached_candidates_are_read_only() -> None:
    sel = selector()
    found = sel.run(SelectRequest(query="weather forecast", k=3)).candidates
    with pytest.raises(ValueError, match="read-only"):
        found.rank[0] = 1.0
