"""The catalog copy's lookups a selection reads for every request, and a copy spliced from a few changed tools."""

import gc
import json
import random
import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pgvector import Vector

from tests.unit.selector.factory import DIM, T, catalog
from toolsel.heap import freeze_start_up_heap
from toolsel.services.selector.catalog import Catalog, build_catalog, rechecked, stale_rows, unseen, with_changes
from toolsel.services.selector.retrieval import LexicalIndex
from toolsel.services.selector.spelling import repair
from toolsel.services.selector.splice import UNUSED_CODES_KEPT, Groups, Renumbering
from toolsel.settings import Settings


def test_related_rows_are_the_live_tools_of_the_same_plugin_in_declared_order() -> None:
    cat = catalog(
        [
            T("a", "first", 0, related=["c", "retired", "b"]),
            T("b", "second", 1),
            T("c", "third", 2, related=["a"]),
            T("b", "same name, other plugin", 3, plugin="q"),
        ]
    )
    assert [cat.related(row) for row in range(4)] == [[2, 1], [], [0], []]


WORDS = ["send", "email", "weather", "forecast", "flight", "book", "hotel", "city", "parcel", "track", "invoice", "pay"]


def tool_rows(rng: random.Random, names: list[str]) -> list[dict[str, Any]]:
    """Rows as ``store.LIVE_TOOLS`` returns them, each with its own words, vector (or none yet) and standing."""
    rows = []
    for name in names:
        plugin, tool = name.split("/")
        text = " ".join(rng.choices(WORDS, k=rng.randint(2, 6)))
        vector = [rng.uniform(-1, 1) for _ in range(DIM)]
        rows.append(
            {
                "plugin_id": plugin,
                "name": tool,
                "tenant_id": rng.choice(["*", "acme"]),
                "category": rng.choice([None, "mail", "travel"]),
                "spec": json.dumps(
                    {
                        "name": tool,
                        "description": text,
                        "tags": rng.sample(WORDS, k=rng.randint(0, 2)),
                        "related_tools": [f"tool{rng.randint(0, 45)}" for _ in range(rng.randint(0, 2))],
                    }
                ),
                "embedding": None if rng.random() < 0.1 else Vector(vector),
                "is_always_pinned": rng.random() < 0.1,
                "pin_weight": rng.randint(0, 2),
                "written": rng.randint(1, 2**53),
                "quarantined": rng.random() < 0.1,
                "rating_sum": None,
                "rating_count": None,
                "calls": rng.randint(0, 5),
                "failures": 0,
                "latency_sum_ms": None,
                "latency_count": None,
            }
        )
    return rows


def same(a: object, b: object) -> bool:
    """Equal, arrays compared element by element and matrices in their memory order, in mappings and lists too."""
    if isinstance(a, np.ndarray):
        layout = a.ndim < 2 or (isinstance(b, np.ndarray) and a.flags.f_contiguous == b.flags.f_contiguous)
        return isinstance(b, np.ndarray) and a.dtype.kind == b.dtype.kind and layout and np.array_equal(a, b)
    if isinstance(a, Mapping):
        return isinstance(b, Mapping) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("seed", range(12))
def test_a_copy_spliced_from_changes_equals_the_copy_read_whole(seed: int) -> None:
    rng = random.Random(seed)
    settings = Settings(embedding_dim=DIM)
    names = [f"{rng.choice('pq')}/tool{i}" for i in range(40)]
    before = tool_rows(rng, names)
    changed_names = rng.sample(names, k=rng.randint(0, 10))
    gone = set(rng.sample([n for n in names if n not in changed_names], k=rng.randint(0, 5)))
    added = [f"{rng.choice('pqr')}/new{i}" for i in range(rng.randint(0, 5))]
    written = tool_rows(rng, changed_names + added)
    by_key = {f"{r['plugin_id']}/{r['name']}": r for r in before + written}
    after = sorted(  # as the store serves the catalog
        (r for key, r in by_key.items() if key not in gone),
        key=lambda r: (-r["pin_weight"], r["plugin_id"], r["name"]),
    )
    categories = [{"plugin_id": "p", "name": "mail", "parent": None, "workflow_hint": "first the address"}]
    mappings = [{"plugin_id": "p", "page_pattern": "/mail*", "category": "mail", "priority": 1}]

    spliced = with_changes(build_catalog(before, [], [], settings), written, gone, categories, mappings, settings)
    assert_same_copy(spliced, build_catalog(after, categories, mappings, settings))
    assert spliced.vectors.flags.f_contiguous or len(spliced) < 2  # a dimension at a time: what cosines stream


def assert_same_copy(spliced: Catalog, whole: Catalog) -> None:
    """Field by field, lookup by lookup and BM25 score by score."""
    for name, value in vars(whole).items():
        if name in ("lexical", "_standings"):
            continue
        assert same(value, vars(spliced)[name]), name
    grouped = replace(spliced)  # its lookups grouped from its own rows, not spliced
    assert same(grouped.category_rows, spliced.category_rows)
    assert same(grouped.filter_rows, spliced.filter_rows)
    assert [spliced.related(row) for row in range(len(spliced))] == [whole.related(row) for row in range(len(whole))]
    for query in ("send an email", "weather in the city", "track my parcel and pay the invoice", "nothing known"):
        assert np.array_equal(spliced.lexical.scores(query), whole.lexical.scores(query))
        assert spliced.lexical.ceiling(query) == whole.lexical.ceiling(query)
    for index in (spliced.lexical, whole.lexical):
        assert index.holding(index.words_of(None)).min(initial=1) > 0  # every word some document holds
    words = sorted(whole.lexical.words_of(None))
    assert sorted(spliced.lexical.words_of(None)) == words
    assert np.array_equal(spliced.lexical.holding(words), whole.lexical.holding(words))


@pytest.mark.parametrize("seed", range(12))
def test_a_copy_checked_against_the_store_s_writes_equals_the_copy_read_whole(seed: int) -> None:
    """The periodic check: each live tool's key and last write name what to read again (the new and rewritten
    tools, nothing else) and what left; spliced in, the copy is the one a whole read gives."""
    rng = random.Random(seed)
    settings = Settings(embedding_dim=DIM)
    names = [f"{rng.choice('pq')}/tool{i}" for i in range(40)]
    ids = {name: at for at, name in enumerate([*names, *(f"r/new{i}" for i in range(5))])}
    before = [r | {"id": ids[f"{r['plugin_id']}/{r['name']}"]} for r in tool_rows(rng, names)]
    rewritten = rng.sample(names, k=rng.randint(0, 10))
    gone = set(rng.sample([n for n in names if n not in rewritten], k=rng.randint(0, 5)))
    added = [f"r/new{i}" for i in range(rng.randint(0, 5))]
    written = [r | {"id": ids[f"{r['plugin_id']}/{r['name']}"]} for r in tool_rows(rng, rewritten + added)]
    by_key = {f"{r['plugin_id']}/{r['name']}": r for r in before + written}
    after = sorted(
        (r for key, r in by_key.items() if key not in gone),
        key=lambda r: (-r["pin_weight"], r["plugin_id"], r["name"]),
    )
    writes = [{"id": r["id"], "key": f"{r['plugin_id']}/{r['name']}", "written": r["written"]} for r in after]

    stale, left = stale_rows(build_catalog(before, [], [], settings), writes)

    assert stale == {ids[name]: name for name in rewritten + added}
    assert left == gone
    read = [r for r in after if r["id"] in stale]
    spliced = with_changes(build_catalog(before, [], [], settings), read, left, [], [], settings)
    assert_same_copy(spliced, build_catalog(after, [], [], settings))


Edit = tuple[str, int, list[str]]
"""("replace" | "insert" | "delete", where, the new document's words)."""
DOCUMENT = st.lists(st.sampled_from([*WORDS, "rare", "unique"]), max_size=8)
EDITS = st.lists(st.tuples(st.sampled_from(["replace", "insert", "delete"]), st.integers(0, 30), DOCUMENT), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    documents=st.lists(DOCUMENT, max_size=20),
    edit_rounds=st.lists(EDITS, min_size=1, max_size=3),
    query=st.lists(st.sampled_from([*WORDS, "rare", "absent"]), min_size=1, max_size=5),
    k1=st.sampled_from([0.9, 1.2, 1.5]),
    b=st.sampled_from([0.0, 0.4, 0.75, 1.0]),
)
def test_an_index_spliced_by_edits_scores_as_bm25s_indexing_the_same_documents(
    documents: list[list[str]], edit_rounds: list[list[Edit]], query: list[str], k1: float, b: float
) -> None:
    """Bit for bit: the postings spliced in place of the changed documents give bm25s's own scores."""
    index = LexicalIndex.of_texts([" ".join(doc) for doc in documents], k1=k1, b=b)
    current = list(documents)
    for edits in edit_rounds:
        plan: list[int | str] = list(range(len(current)))
        for kind, where, words in edits:
            if kind == "insert":
                plan.insert(where % (len(plan) + 1), " ".join(words))
            elif plan:
                at = where % len(plan)
                if kind == "delete":
                    del plan[at]
                else:
                    plan[at] = " ".join(words)
        current = [current[doc] if isinstance(doc, int) else doc.split() for doc in plan]
        kept = np.array([doc if isinstance(doc, int) else -1 for doc in plan], dtype=np.int64)
        index = index.with_documents(Renumbering.of(kept, index.size), [doc for doc in plan if isinstance(doc, str)])

        fresh = bm25s.BM25(k1=k1, b=b)
        known = [word for word in query if any(word in doc for doc in current)]
        expected = np.zeros(len(current), dtype=np.float32)
        if known:
            fresh.index(current, show_progress=False)
            expected = fresh.get_scores(known)
        assert np.array_equal(index.scores(" ".join(query)), expected.astype(np.float64))
        afresh = LexicalIndex.of_texts([" ".join(doc) for doc in current], k1=k1, b=b)
        assert sorted(index.words_of(None)) == sorted(afresh.words_of(None))
        assert np.array_equal(index.holding(afresh.words_of(None)), afresh.holding(afresh.words_of(None)))
        held = len(index.words_of(None))  # words no document holds any more are at most a share of the vocabulary
        assert len(index._vocab) - held <= UNUSED_CODES_KEPT * len(index._vocab)


@settings(max_examples=100, deadline=None)
@given(rounds=st.lists(st.lists(st.lists(st.sampled_from(WORDS), max_size=3), max_size=8), min_size=1, max_size=8))
def test_a_lookup_spliced_round_after_round_keeps_only_a_share_of_labels_no_row_holds(
    rounds: list[list[list[str]]],
) -> None:
    """Every row replaced each round (a catalog whose tools all changed): the lookup answers as one grouped afresh,
    and the labels only earlier rows carried are dropped once they are more than ``UNUSED_CODES_KEPT`` of them."""
    groups = Groups.of([])
    for labels in rounds:
        moved = Renumbering.of(np.full(len(labels), -1, dtype=np.int64), groups_size(groups))
        groups = groups.spliced(moved, labels)
        assert same(dict(groups), dict(Groups.of(labels)))
        assert len(groups._codes) - len(groups) <= UNUSED_CODES_KEPT * len(groups._codes)


def groups_size(groups: Groups) -> int:
    """The rows a lookup spans (one past its highest row)."""
    return int(groups._rows.max()) + 1 if groups._rows.size else 0


def test_a_copy_replaced_after_start_up_froze_the_heap_is_freed_without_the_collector() -> None:
    """The selector freezes what start-up made (``freeze_start_up_heap``): a copy it replaces later must be freed
    by its references alone, so no copy, nor what a selection caches in it, may hold a reference cycle."""
    rng = random.Random(0)
    settings = Settings(embedding_dim=DIM)
    first = build_catalog(tool_rows(rng, [f"p/tool{i}" for i in range(40)]), [], [], settings)
    for row in range(len(first)):  # what selections cache in a copy
        first.related(row)
        first.words(row)
    first.standing("acme")
    first.filter_rows  # noqa: B018
    repair("sendd an emial", first.lexical, settings)
    gone = weakref.ref(first)
    gc.disable()
    try:
        freeze_start_up_heap()
        current = with_changes(first, tool_rows(rng, ["p/tool3"]), (), [], [], settings)
        del first
        assert gone() is None
        assert len(current) == 40
    finally:
        gc.unfreeze()
        gc.enable()


def test_unseen_rows_are_those_whose_write_the_copy_lacks() -> None:
    rng = random.Random(2)
    settings = Settings(embedding_dim=DIM)
    rows = tool_rows(rng, ["p/a", "p/b"])
    copy = build_catalog(rows, [], [], settings)
    again, rewritten, new = rows[0], rows[1] | {"written": rows[1]["written"] + 1}, tool_rows(rng, ["p/c"])[0]
    assert unseen(copy, [again, rewritten, new]) == [rewritten, new]


def test_a_check_that_finds_no_tool_changed_keeps_the_indexes_and_caches_and_reads_the_rest_anew() -> None:
    rng = random.Random(1)
    settings = Settings(embedding_dim=DIM)
    rows = tool_rows(rng, [f"p/tool{i}" for i in range(20)])
    copy = build_catalog(rows, [], [], settings)
    words, related, lookups = copy.words(3), copy.related(3), copy.filter_rows
    base = [r | {"key": f"{r['plugin_id']}/{r['name']}", "calls": 7} for r in rows]
    categories = [{"plugin_id": "p", "name": "mail", "parent": None, "workflow_hint": "first the address"}]

    checked = rechecked(copy, [], set(), categories, [], base, [], settings)

    assert checked.lexical is copy.lexical  # and with it the repairs kept for it
    assert checked.filter_rows is lookups
    assert checked.words(3) is words
    assert checked.related(3) is related
    assert checked.workflow_hints == {("p", "mail"): "first the address"}
    assert checked.calls.tolist() == [7.0] * 20
    assert copy.calls.tolist() != checked.calls.tolist()  # the copy in use is never changed
    assert copy.workflow_hints == {}
