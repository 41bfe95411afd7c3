"""The historical recommendation and fitness signals from the review index (seed 002)."""

import numpy as np
import pytest

from services.selector.pipeline import historical_fitness, historical_recommendation

CENTROIDS = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32)
ROWS = np.array([0, 1, 2], dtype=np.int64)
FITNESS = np.array([1.4, 0.75, 1.4])
QUERY = np.array([1.0, 0.0], dtype=np.float32)


def test_recommendation_keeps_only_near_helpful_entries() -> None:
    got = historical_recommendation(CENTROIDS, ROWS, FITNESS, QUERY, rows=4, neighbours=10, min_similarity=0.5)
    # row 0: similarity 1.0, fitness 1.4 -> 0.4; row 1 unhelpful (0.75); row 2 too far (similarity 0)
    assert got.tolist() == pytest.approx([0.4, 0.0, 0.0, 0.0])


def test_recommendation_ignores_entries_outside_the_catalog() -> None:
    rows = np.array([-1, 1, 2], dtype=np.int64)
    got = historical_recommendation(CENTROIDS, rows, FITNESS, QUERY, rows=3, neighbours=10, min_similarity=0.5)
    assert got.tolist() == [0.0, 0.0, 0.0]


def test_fitness_is_the_similarity_weighted_mean_and_neutral_elsewhere() -> None:
    rows = np.array([0, 0, 2], dtype=np.int64)
    got = historical_fitness(CENTROIDS, rows, FITNESS, QUERY, rows=3, neighbours=10, min_similarity=0.5)
    # row 0: (1.0 * 1.4 + 0.8 * 0.75) / 1.8
    assert got[0] == pytest.approx((1.4 + 0.8 * 0.75) / 1.8)
    assert got[1:].tolist() == [1.0, 1.0]


def test_empty_index_is_neutral() -> None:
    empty = np.zeros((0, 2), dtype=np.float32)
    none = np.zeros(0, dtype=np.int64)
    assert historical_fitness(empty, none, np.zeros(0), QUERY, 2, 10, 0.5).tolist() == [1.0, 1.0]
    assert historical_recommendation(empty, none, np.zeros(0), QUERY, 2, 10, 0.5).tolist() == [0.0, 0.0]
