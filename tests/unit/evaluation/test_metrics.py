"""Metrics against hand-computed cases."""

import math

import pytest

from toolsel.evaluation.metrics import (
    complete_at,
    mean_metrics,
    ndcg_at,
    query_metrics,
    recall_at,
    reciprocal_rank,
)

RANKED = ["a", "b", "c", "d", "e"]


def test_recall_counts_the_share_of_relevant_tools_in_the_top_k() -> None:
    relevant = frozenset({"b", "e", "z"})
    assert recall_at(RANKED, relevant, 1) == 0.0
    assert recall_at(RANKED, relevant, 2) == pytest.approx(1 / 3)
    assert recall_at(RANKED, relevant, 5) == pytest.approx(2 / 3)
    assert recall_at(RANKED, relevant, 10) == pytest.approx(2 / 3)


def test_ndcg_with_binary_gains() -> None:
    # relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1 + 1/log2(3)
    relevant = frozenset({"b", "d"})
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at(RANKED, relevant, 5) == pytest.approx(expected)
    assert ndcg_at(RANKED, frozenset({"a"}), 5) == 1.0
    assert ndcg_at(RANKED, frozenset({"c"}), 2) == 0.0


def test_ndcg_ideal_is_capped_at_k() -> None:
    # three relevant, k = 2, both top slots relevant: perfect
    assert ndcg_at(RANKED, frozenset({"a", "b", "c"}), 2) == 1.0


def test_complete_needs_every_relevant_tool() -> None:
    assert complete_at(RANKED, frozenset({"a", "e"}), 5) == 1.0
    assert complete_at(RANKED, frozenset({"a", "e"}), 4) == 0.0


def test_reciprocal_rank_of_the_first_relevant_tool() -> None:
    assert reciprocal_rank(RANKED, frozenset({"c", "e"})) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, frozenset({"z"})) == 0.0
    assert reciprocal_rank([], frozenset({"a"})) == 0.0


def test_query_metrics_and_their_mean() -> None:
    first = query_metrics(RANKED, frozenset({"a"}))
    second = query_metrics(RANKED, frozenset({"z"}))
    assert first["R@1"] == first["MRR"] == first["Complete@10"] == 1.0
    assert all(v == 0.0 for v in second.values())
    mean = mean_metrics([first, second])
    assert mean["R@1"] == 0.5
    assert mean["NDCG@10"] == 0.5
    assert set(mean) == set(first)
    assert all(v == 0.0 for v in mean_metrics([]).values())
