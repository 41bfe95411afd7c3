"""User history (seed 001): the asking user's own success rate with each tool."""

from toolsel.services.selector.signals.base import RerankContext
from toolsel.services.selector.stages import Scores


class UserHistorySignal:
    name = "user_history"
    field = "user_history"
    neutral = 0.0

    def scores(self, ctx: RerankContext) -> Scores:
        request = ctx.request
        everywhere = ctx.user_history.scores(request.tenant_id, request.user_id, ctx.catalog.rows, len(ctx.catalog))
        result: Scores = everywhere[ctx.rows]
        return result


USER_HISTORY = UserHistorySignal()
