"""Quality (seed 004): success rate x average rating, the success rate from the tool's Beta posterior for this
context (its mean to exploit, a Thompson draw to explore)."""

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores


class QualitySignal:
    name = "quality"
    field = "quality"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        result: Scores = ctx.success * ctx.standing.rating[ctx.rows]
        return result


QUALITY = QualitySignal()
