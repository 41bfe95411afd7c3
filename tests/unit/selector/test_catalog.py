"""The catalog copy's lookups a selection reads for every request, and a copy spliced from a few changed tools."""

import json
import random
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
from toolsel.services.selector.catalog import build_catalog, with_changes
from toolsel.services.selector.retrieval import LexicalIndex
from toolsel.services.selector.splice import Renumbering
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
    """Equal, arrays compared element by element, in mappings and lists too."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype.kind == b.dtype.kind and np.array_equal(a, b)
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
    whole = build_catalog(after, categories, mappings, settings)

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
