"""Batch compaction of the review index (seed 002): k-means of each tool's reviewed queries.

For one tool: K centroids of its review-log query embeddings (spherical k-means, cosine similarity, k-means++
start from a fixed seed so a rerun gives the same index), each with the average fitness of its members
weighted by their similarity to it.
"""

import numpy as np
import numpy.typing as npt

from toolsel.services.learner.review_index import Entry, unit

Matrix = npt.NDArray[np.float32]
MIN_WEIGHT = 1e-6
"""Weight of a member pointing away from its centroid (its cosine similarity is not positive)."""


def kmeans(points: Matrix, k: int, seed: int = 0, iterations: int = 50) -> tuple[Matrix, npt.NDArray[np.int64]]:
    """Up to ``k`` unit centroids of unit ``points`` and each point's cluster; fewer when points coincide."""
    rng = np.random.default_rng(seed)
    centroids = [points[int(rng.integers(len(points)))]]
    while len(centroids) < k:
        distance = np.clip(1.0 - (points @ np.array(centroids).T).max(axis=1), 0.0, None)
        if distance.sum() <= 1e-9:
            break
        centroids.append(points[int(rng.choice(len(points), p=distance / distance.sum()))])
    centres = np.array(centroids, dtype=np.float32)
    labels = np.full(len(points), -1, dtype=np.int64)
    for _ in range(iterations):
        new = (points @ centres.T).argmax(axis=1).astype(np.int64)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(len(centres)):
            members = points[labels == j]
            if len(members):
                centres[j] = unit(members.sum(axis=0))
    used = np.unique(labels)
    remap = np.full(len(centres), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return centres[used], remap[labels]


def compact(points: Matrix, fitness: npt.NDArray[np.float64], k: int, seed: int = 0) -> list[Entry]:
    """A tool's index entries from all its reviews: at most ``k``, one per cluster of similar queries."""
    if len(points) == 0:
        return []
    centres, labels = kmeans(points, k, seed)
    entries = []
    for j, centre in enumerate(centres):
        members = labels == j
        weights = np.clip(points[members] @ centre, MIN_WEIGHT, None).astype(np.float64)
        entries.append(
            Entry(
                centroid=centre, fitness=float(weights @ fitness[members] / weights.sum()), reviews=int(members.sum())
            )
        )
    return entries
