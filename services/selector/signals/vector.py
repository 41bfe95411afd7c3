"""Vector cosine: how close the tool's meaning is to the query's (unit vectors, so a dot product)."""

import numpy as np

from services.selector.signals.base import QueryContext
from services.selector.stages import Scores, cosine


class VectorSignal:
    name = "vector"
    field = "similarity"

    def scores(self, ctx: QueryContext) -> Scores:
        """Cosine clipped at 0; 0 for a tool without a vector or a query without an embedding."""
        cat = ctx.catalog
        if ctx.vector is None:
            return np.zeros(len(cat), dtype=np.float64)
        result: Scores = np.where(cat.has_vector, cosine(cat.vectors, ctx.vector), 0.0).clip(min=0.0)
        return result

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        return 1.0


VECTOR = VectorSignal()
