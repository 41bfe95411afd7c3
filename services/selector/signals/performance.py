"""Performance (seed 001): the mean of a latency score and the success share of the tool's calls."""

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores


class PerformanceSignal:
    name = "performance"
    field = "performance"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        result: Scores = ctx.standing.performance[ctx.rows]
        return result


PERFORMANCE = PerformanceSignal()
