"""Historical fitness (seed 002): how well each tool served past queries near this one, from their reviews."""

import numpy as np

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores, historical_fitness


class FitnessSignal:
    name = "fitness"
    field = "fitness"
    neutral = 1.0
    """A multiplier: above 1 helped, below 1 did not; the composite weighs ``fitness - 1``."""

    def scores(self, ctx: RerankContext) -> Scores:
        """Neutral everywhere without the whole query's embedding or an index."""
        if ctx.vector is None or ctx.reviews is None:
            return np.ones(ctx.rows.size, dtype=np.float64)
        near = ctx.reviews.near(ctx.vector).within(ctx.rows)
        return historical_fitness(near, ctx.rows.size, ctx.settings.review_similarity_sharpness)


FITNESS = FitnessSignal()
