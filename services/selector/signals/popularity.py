"""Popularity (seed 001): the tool's usage percentile among the live tools the tenant sees, by its own calls."""

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores


class PopularitySignal:
    name = "popularity"
    field = "popularity"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        result: Scores = ctx.standing.popularity[ctx.rows]
        return result


POPULARITY = PopularitySignal()
