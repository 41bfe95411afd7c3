"""Vector cosine: how close the tool's meaning is to the query's (unit vectors, so a dot product); for a tool
the request's scope learnt from use, its blend of declared and learnt vectors replaces the declared one."""

import numpy as np

from services.selector.signals.base import QueryContext
from services.selector.stages import Scores, cosine
from services.selector.usage import usage_cosine


class VectorSignal:
    name = "vector"
    field = "similarity"

    def scores(self, ctx: QueryContext) -> Scores:
        """Cosine clipped at 0; 0 for a tool without a vector (declared or learnt) or a query without one."""
        cat = ctx.catalog
        if ctx.vector is None:
            return np.zeros(len(cat), dtype=np.float64)
        raw = cosine(cat.vectors, ctx.vector) if ctx.cosine is None else ctx.cosine
        result: Scores = np.where(cat.has_vector, raw, 0.0)
        if ctx.usage is not None:
            result[ctx.usage.rows] = usage_cosine(ctx.usage, ctx.vector, ctx.settings.usage_negative_similarity)
        clipped: Scores = result.clip(min=0.0)
        return clipped

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        return 1.0


VECTOR = VectorSignal()
