"""The review index (seed 002): per tool, query centroids with the aggregate fitness of their reviews.

Online, each review joins its tool's nearest entry when the queries are close enough (a running mean of the
centroid and the fitness), else it starts a new entry; the batch compaction (``compaction.py``) rebuilds it.
"""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Entry:
    centroid: Vector
    """Unit length: the selector ranks entries by a dot product with the query."""
    fitness: float
    reviews: int
    id: int | None = None
    """Its row in the store; None for an entry not stored yet."""


def unit(vector: npt.NDArray[np.floating]) -> Vector:
    norm = float(np.linalg.norm(vector))
    result: Vector = (vector / max(norm, 1e-12)).astype(np.float32)
    return result


def add_review(entries: list[Entry], query: Vector, fitness: float, min_similarity: float) -> list[Entry]:
    """The tool's entries after one more review of ``query`` (a unit vector) with ``fitness``."""
    if entries:
        similarity = np.array([float(e.centroid @ query) for e in entries])
        best = int(similarity.argmax())
        if similarity[best] >= min_similarity:
            near = entries[best]
            n = near.reviews
            merged = Entry(
                centroid=unit(near.centroid * n + query),
                fitness=(near.fitness * n + fitness) / (n + 1),
                reviews=n + 1,
                id=near.id,
            )
            return [*entries[:best], merged, *entries[best + 1 :]]
    return [*entries, Entry(centroid=unit(query), fitness=fitness, reviews=1)]
