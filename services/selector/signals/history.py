"""The historical recommendation (seed 002): tools that helped on past queries near this one."""

import numpy as np

from toolsel.services.selector.signals.base import QueryContext
from toolsel.services.selector.stages import Scores, historical_recommendation


class HistorySignal:
    name = "history"
    field = None

    def scores(self, ctx: QueryContext) -> Scores:
        """From the review index; 0 everywhere without an embedding or an index."""
        if ctx.vector is None or ctx.reviews is None:
            return np.zeros(len(ctx.catalog), dtype=np.float64)
        return historical_recommendation(ctx.reviews.near(ctx.vector), len(ctx.catalog))

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        """No weight when no past query vouches for any tool, so the other signals keep the whole fusion."""
        return 1.0 if scores.any() else 0.0


HISTORY = HistorySignal()
