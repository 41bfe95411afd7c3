"""Vector cosine: how close the tool's meaning is to the query's (unit vectors, so a dot product); for a tool
the request's scope learnt from use, its blend of declared and learnt vectors replaces the declared one."""

from functools import reduce

import numpy as np

from toolsel.services.selector.signals.base import QueryContext
from toolsel.services.selector.stages import Scores, Vector, cosine
from toolsel.services.selector.usage import usage_cosine


class VectorSignal:
    name = "vector"
    field = "similarity"

    def scores(self, ctx: QueryContext) -> Scores:
        """Cosine clipped at 0, the best over the query and its sentences (if any); 0 for a tool without a vector
        (declared or learnt) or a query without one."""
        if ctx.vector is None:
            return np.zeros(len(ctx.catalog), dtype=np.float64)
        readings = [(ctx.vector, ctx.cosine), *ctx.sentences]
        best: Scores = reduce(np.maximum, (_cosines(ctx, vector, raw) for vector, raw in readings))
        clipped: Scores = best.clip(min=0.0)
        return clipped

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        return 1.0


def _cosines(ctx: QueryContext, vector: Vector, raw: Scores | None) -> Scores:
    """One vector's cosine with every tool (``raw``: computed already), learnt tools by their learnt vectors."""
    cat = ctx.catalog
    result: Scores = np.where(cat.has_vector, cosine(cat.vectors, vector) if raw is None else raw, 0.0)
    if ctx.usage is not None:
        result[ctx.usage.rows] = usage_cosine(ctx.usage, vector, ctx.settings.usage_negative_similarity)
    return result


VECTOR = VectorSignal()
