"""Relevance: retrieval's fused score, the composite's similarity term (seed 004)."""

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores


class RelevanceSignal:
    name = "relevance"
    field = "relevance"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        return ctx.relevance


RELEVANCE = RelevanceSignal()
