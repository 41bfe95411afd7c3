"""Recency: exponential decay since the tool's last successful call in this tenant's context (0 for never):
successes on one page lift nothing on another."""

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores, recency


class RecencySignal:
    name = "recency"
    field = "recency"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        return recency(ctx.last_success_s, ctx.now_s, ctx.settings.recency_half_life_days)


RECENCY = RecencySignal()
