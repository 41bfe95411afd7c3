"""The historical recommendation and fitness signals from the review index (seed 002)."""

import numpy as np
import pytest

from toolsel.services.selector.stages import historical_fitness, historical_recommendation, nearest_reviews

CENTROIDS = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]], dtype=np.float32)
ROWS = np.array([0, 1, 2], dtype=np.int64)
FITNESS = np.array([1.4, 0.75, 1.4])
QUERY = np.array([1.0, 0.0], dtype=np.float32)


def test_nearest_keeps_close_entries_of_tools_in_the_catalog_nearest_first() -> None:
    near = nearest_reviews(CENTROIDS, np.array([0, -1, 2], dtype=np.int64), FITNESS, QUERY, 10, 0.5)
    assert near.rows.tolist() == [0]  # row 1's tool is not in the catalog; row 2 is too far (similarity 0)
    assert nearest_reviews(CENTROIDS, ROWS, FITNESS, QUERY, 1, 0.0).rows.tolist() == [0]
    assert nearest_reviews(CENTROIDS, ROWS, FITNESS, QUERY, 2, 0.0).similarity.tolist() == pytest.approx([1.0, 0.8])


def test_entries_not_to_be_read_never_take_a_neighbours_place() -> None:
    # another scope's (or a deleted tool's) entry nearer the query than this scope's: the place stays this scope's
    near = nearest_reviews(CENTROIDS, np.array([-1, 1, 2], dtype=np.int64), FITNESS, QUERY, 1, 0.0)
    assert near.rows.tolist() == [1]
    assert near.similarity.tolist() == pytest.approx([0.8])


def test_recommendation_keeps_only_helpful_entries() -> None:
    near = nearest_reviews(CENTROIDS, ROWS, FITNESS, QUERY, 10, 0.5)
    # row 0: similarity 1.0, fitness 1.4 -> 0.4; row 1 was unhelpful (0.75); row 2 too far
    assert historical_recommendation(near, rows=4).tolist() == pytest.approx([0.4, 0.0, 0.0, 0.0])


def test_fitness_is_the_similarity_weighted_mean_and_neutral_elsewhere() -> None:
    near = nearest_reviews(CENTROIDS, np.array([0, 0, 2], dtype=np.int64), FITNESS, QUERY, 10, 0.5)
    got = historical_fitness(near, rows=3)
    assert got[0] == pytest.approx((1.0 * 1.4 + 0.8 * 0.75) / 1.8)
    assert got[1:].tolist() == [1.0, 1.0]


def test_sharpness_lets_the_nearest_verdicts_decide() -> None:
    near = nearest_reviews(CENTROIDS, np.array([0, 0, 2], dtype=np.int64), FITNESS, QUERY, 10, 0.5)
    far = 0.8 * np.exp(10 * (0.8 - 1.0))
    assert historical_fitness(near, 3, 10.0)[0] == pytest.approx((1.0 * 1.4 + far * 0.75) / (1.0 + far))
    assert historical_fitness(near, 3, 10.0)[0] > historical_fitness(near, 3)[0]


def test_empty_index_is_neutral() -> None:
    near = nearest_reviews(np.zeros((0, 2), dtype=np.float32), np.zeros(0, dtype=np.int64), np.zeros(0), QUERY, 10, 0.5)
    assert historical_fitness(near, 2).tolist() == [1.0, 1.0]
    assert historical_recommendation(near, 2).tolist() == [0.0, 0.0]


def test_fitness_over_a_row_subset_is_the_whole_catalogs_at_those_rows() -> None:
    near = nearest_reviews(CENTROIDS, np.array([3, 1, 3], dtype=np.int64), FITNESS, QUERY, 10, 0.0)
    subset = np.array([0, 3], dtype=np.int64)
    within = near.within(subset)
    assert within.rows.tolist() == [1, 1]  # row 3 is position 1; row 1 is not in the subset
    assert historical_fitness(within, 2).tolist() == historical_fitness(near, 4)[subset].tolist()
