"""The review index: online merging and the k-means compaction."""

import numpy as np
import pytest

from toolsel.services.learner.compaction import compact, kmeans
from toolsel.services.learner.review_index import Entry, add_review, unit


def around(direction: int, count: int, rng: np.random.Generator, dim: int = 16) -> np.ndarray:
    """Unit vectors close to one axis."""
    base = np.zeros(dim, dtype=np.float32)
    base[direction] = 1.0
    return np.array([unit(base + 0.05 * rng.standard_normal(dim)) for _ in range(count)], dtype=np.float32)


def test_kmeans_finds_the_groups() -> None:
    rng = np.random.default_rng(1)
    points = np.vstack([around(0, 20, rng), around(5, 20, rng), around(9, 20, rng)])
    centres, labels = kmeans(points, 3)
    assert centres.shape == (3, 16)
    assert np.allclose(np.linalg.norm(centres, axis=1), 1.0, atol=1e-5)
    assert [len(set(labels[i : i + 20])) for i in (0, 20, 40)] == [1, 1, 1]
    assert len(set(labels)) == 3


def test_kmeans_returns_fewer_centres_when_points_coincide() -> None:
    points = np.vstack([around(0, 1, np.random.default_rng(2))] * 5)
    centres, labels = kmeans(points, 4)
    assert len(centres) == 1
    assert set(labels) == {0}


def test_compact_shrinks_to_k_entries_with_the_weighted_fitness_of_each_cluster() -> None:
    rng = np.random.default_rng(3)
    points = np.vstack([around(0, 10, rng), around(7, 10, rng)])
    fitness = np.array([1.4] * 10 + [0.35] * 10)
    entries = sorted(compact(points, fitness, k=2), key=lambda e: e.fitness)
    assert [e.reviews for e in entries] == [10, 10]
    assert [e.fitness for e in entries] == pytest.approx([0.35, 1.4])


def test_compact_is_reproducible_and_empty_for_no_reviews() -> None:
    rng = np.random.default_rng(4)
    points = np.vstack([around(i, 5, rng) for i in range(6)])
    fitness = rng.uniform(0.35, 1.4, len(points))
    first, second = compact(points, fitness, k=3), compact(points, fitness, k=3)
    assert [e.fitness for e in first] == [e.fitness for e in second]
    assert len(first) == 3
    assert sum(e.reviews for e in first) == 30
    assert compact(np.zeros((0, 16), dtype=np.float32), np.zeros(0), k=3) == []


def test_online_review_merges_into_a_near_entry_or_starts_one() -> None:
    rng = np.random.default_rng(5)
    a1, a2 = around(0, 2, rng)
    (b,) = around(8, 1, rng)
    entries = add_review([], a1, 1.4, min_similarity=0.9)
    entries = add_review(entries, a2, 0.35, min_similarity=0.9)
    assert len(entries) == 1
    assert (entries[0].reviews, entries[0].fitness) == (2, pytest.approx((1.4 + 0.35) / 2))
    assert np.linalg.norm(entries[0].centroid) == pytest.approx(1.0, abs=1e-5)
    entries = add_review(entries, b, 0.75, min_similarity=0.9)
    assert [(e.reviews, e.fitness) for e in entries][1] == (1, 0.75)
    assert isinstance(entries[1], Entry)
