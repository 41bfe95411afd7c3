"""How a learnt tool's retrieval vector weighs its declared vector against the centroid of the queries it served:
the selectors score with it, and the learner fits residuals on top of it, so both read it from here."""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolsel.settings import Settings

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Blending:
    """How a learnt tool's retrieval vector weighs its declared vector: as ``prior`` examples' worth against its
    ``n`` learnt ones, ``w = max(floor, prior / (n + prior))``. A centroid of a query or two is that query's
    phrasing, close to every query phrased alike, so it must not yet outweigh the description; the floor keeps
    the description's share however much was learnt."""

    floor: float
    prior: float

    @classmethod
    def from_settings(cls, settings: Settings) -> "Blending":
        return cls(settings.usage_declared_weight, settings.usage_declared_prior)

    def declared_weights(self, positives: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        shrunk = self.prior / (positives + self.prior) if self.prior > 0 else np.zeros(positives.shape)
        result: npt.NDArray[np.float32] = np.maximum(self.floor, shrunk).astype(np.float32)
        return result

    def learnt_weights(self, examples: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """How much ``n`` learnt examples count against the declared text, ``n / (n + prior)``: the words of a
        query or two are that query's phrasing, and count little until more queries agree."""
        result: npt.NDArray[np.float64] = (
            examples / (examples + self.prior) if self.prior > 0 else np.ones(examples.shape)
        )
        return result


def blend(declared: Matrix, centroids: Matrix, declared_weight: float | npt.NDArray[np.float32]) -> Matrix:
    """Each row's ``normalize(w x declared + (1 - w) x centroid)`` (w one for all rows or one per row); a tool
    without a declared vector (zero row) is its centroid."""
    weight = np.asarray(declared_weight, dtype=np.float32).reshape(-1, 1)
    mixed = weight * declared + (1.0 - weight) * centroids
    norms = np.linalg.norm(mixed, axis=1, keepdims=True)
    result: Matrix = (mixed / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return result
