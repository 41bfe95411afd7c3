"""Popularity (seed 001): the tool's usage percentile among live tools."""

from services.selector.signals.base import RerankContext
from services.selector.stages import Scores


class PopularitySignal:
    name = "popularity"
    field = "popularity"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        result: Scores = ctx.catalog.popularity[ctx.rows]
        return result


POPULARITY = PopularitySignal()
