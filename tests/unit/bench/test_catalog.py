"""The benchmark's catalog and queries: nested sizes, unique names, bounded distinct queries."""

import pytest

from toolsel.bench.catalog import MAX_QUERY_CHARS, bench_queries, catalog_of, interleaved
from toolsel.evaluation.dataset import Tool

POOL = [Tool("a", "first", None), Tool("b", "second", {"type": "object"}), Tool("a", "duplicate", None)]


def test_a_small_catalog_is_the_start_of_the_pool() -> None:
    assert [t.name for t in catalog_of(POOL, 2)] == ["a", "b"]


def test_past_the_pool_come_numbered_copies_with_unique_names() -> None:
    tools = catalog_of(POOL, 5)
    assert [t.name for t in tools] == ["a", "b", "a~copy2", "b~copy2", "a~copy3"]
    assert tools[3].parameters == {"type": "object"}


def test_a_larger_catalog_starts_with_the_smaller_one() -> None:
    assert catalog_of(POOL, 7)[:4] == catalog_of(POOL, 4)


def test_an_empty_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="no tools"):
        catalog_of([], 3)


def test_queries_are_cut_and_distinct_once_they_run_out() -> None:
    queries = bench_queries(["x" * 900, "short", "  "], 5)
    assert len(queries) == 5
    assert len(set(queries)) == 5
    assert all(len(q) <= MAX_QUERY_CHARS for q in queries)
    assert queries[:2] == ["x" * MAX_QUERY_CHARS, "short"]


def test_no_queries_is_refused() -> None:
    with pytest.raises(ValueError, match="no queries"):
        bench_queries([" "], 3)


def test_interleaved_queries_take_the_sets_in_turn_each_shuffled_by_seed() -> None:
    long_set, short_set = [f"long request {i}" for i in range(6)], [f"q{i}" for i in range(3)]
    mixed = interleaved([long_set, short_set], seed=1)
    assert sorted(mixed) == sorted(long_set + short_set)
    assert [q.startswith("long") for q in mixed[:6]] == [True, False] * 3  # both sets in every stretch
    assert mixed == interleaved([long_set, short_set], seed=1)
    assert mixed != interleaved([long_set, short_set], seed=2)
