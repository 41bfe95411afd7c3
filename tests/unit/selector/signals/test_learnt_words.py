"""Learnt words: BM25 over what each tool served alone in the request's scope, weighed by how many queries taught
it; the BM25 signal takes each tool's better match of its own text and its learnt words."""

import dataclasses

import pytest

from tests.unit.selector.factory import T, catalog, query_context, usage_record
from toolsel.services.selector.signals.bm25 import BM25
from toolsel.services.selector.usage import Blending, UsageMemory

CAT = catalog([T("a", "lookup tool", 0), T("b", "another tool", 1), T("c", "third tool", 2)])


def learnt(*rows: dict[str, object]) -> UsageMemory:
    memory = UsageMemory()
    memory.merge(rows)  # type: ignore[arg-type]
    memory.index_words(k1=1.2, b=0.75)
    return memory


def test_nothing_learnt_leaves_the_tools_own_text() -> None:
    assert not BM25.scores(query_context(CAT, "where is my parcel")).any()
    assert BM25.scores(query_context(CAT, "lookup")).tolist()[0] > 0


def test_a_tool_is_found_by_the_words_it_was_asked_for_with_in_the_scope() -> None:
    memory = learnt(usage_record("p/a", 0, 1, words=["where is my parcel", "track my parcel"]))
    view = memory.view(CAT, "acme", Blending(0.3, 8.0))
    ctx = dataclasses.replace(query_context(CAT, "track a parcel"), usage=view)
    scores = BM25.scores(ctx)
    assert scores[0] > 0
    assert scores[1] == scores[2] == 0
    assert memory.view(CAT, "other-tenant", Blending(0.3, 8.0)) is None


def test_the_words_of_more_queries_count_more() -> None:
    blending = Blending(0.3, 8.0)
    one = learnt(usage_record("p/a", 0, 1, words=["track my parcel"]))
    four = learnt(usage_record("p/a", 0, 1, words=["track my parcel"] * 4))
    weights = [m.view(CAT, "acme", blending).words.weights for m in (one, four)]  # type: ignore[union-attr]
    assert [w.tolist() for w in weights] == [pytest.approx([1 / 9]), pytest.approx([4 / 12])]


def test_a_learnt_tool_without_words_has_no_index() -> None:
    view = learnt(usage_record("p/a", 0, 1)).view(CAT, "acme", Blending(0.3, 8.0))
    assert view is not None
    assert view.words is None


def test_words_are_searched_once_indexed_and_the_old_index_serves_until_then() -> None:
    blending = Blending(0.3, 8.0)
    memory = UsageMemory()
    memory.merge([usage_record("p/a", 0, 1, words=["track my parcel"])])
    assert memory.view(CAT, "acme", blending).words is None  # type: ignore[union-attr]
    memory.index_words(k1=1.2, b=0.75)
    first = memory.view(CAT, "acme", blending)
    assert first is not None
    assert first.words is not None
    memory.merge([usage_record("p/b", 1, 2, words=["convert a pdf"])])
    before = memory.view(CAT, "acme", blending)
    assert before is not None
    assert before.words is not None
    assert before.words.rows.tolist() == [0]
    memory.index_words(k1=1.2, b=0.75)
    after = memory.view(CAT, "acme", blending)
    assert after is not None
    assert after.words is not None
    assert sorted(after.words.rows.tolist()) == [0, 1]
    ctx = dataclasses.replace(query_context(CAT, "convert this pdf"), usage=after)
    assert BM25.scores(ctx)[1] > 0


def test_a_tool_no_longer_in_the_catalog_is_left_out() -> None:
    memory = learnt(
        usage_record("p/a", 0, 1, words=["track my parcel"]), usage_record("p/gone", 1, 2, words=["track a parcel"])
    )
    view = memory.view(CAT, "acme", Blending(0.3, 8.0))
    assert view is not None
    assert view.words is not None
    assert view.words.rows.tolist() == [0]
    scores = BM25.scores(dataclasses.replace(query_context(CAT, "track parcel"), usage=view))
    assert scores[0] > 0
    assert scores.size == len(CAT)


def test_the_better_of_its_own_text_and_its_learnt_words_counts_not_their_sum() -> None:
    memory = learnt(usage_record("p/a", 0, 1, words=["lookup the parcel"] * 50))
    view = memory.view(CAT, "acme", Blending(0.3, 8.0))
    assert view is not None
    assert view.words is not None
    ctx = query_context(CAT, "lookup parcel")
    own = BM25.scores(ctx)[0]
    words = view.words.scores("lookup parcel", len(CAT))[0]
    assert BM25.scores(dataclasses.replace(ctx, usage=view))[0] == pytest.approx(max(own, words))
    assert own > 0
    assert words > 0  # both match: the sum would exceed either
