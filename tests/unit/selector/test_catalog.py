"""The catalog copy's lookups a selection reads for every request, and a copy spliced from a few changed tools."""

import json
import random
from typing import Any

import numpy as np
import pytest
from pgvector import Vector

from tests.unit.selector.factory import DIM, T, catalog
from toolsel.services.selector.catalog import build_catalog, with_changes
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
    assert cat.related == [[2, 1], [], [0], []]


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
                "spec": json.dumps({"name": tool, "description": text, "tags": rng.sample(WORDS, k=rng.randint(0, 2))}),
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
    """Equal, arrays compared element by element, in dicts and lists too."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype.kind == b.dtype.kind and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
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
    for query in ("send an email", "weather in the city", "track my parcel and pay the invoice", "nothing known"):
        assert np.array_equal(spliced.lexical.scores(query), whole.lexical.scores(query))
        assert spliced.lexical.ceiling(query) == whole.lexical.ceiling(query)
