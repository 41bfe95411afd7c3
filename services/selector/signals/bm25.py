"""BM25 over the tools' text: the query's own words matched against names, descriptions and examples."""

from services.selector.retrieval import bm25_confidence
from services.selector.signals.base import QueryContext
from services.selector.stages import Scores


class Bm25Signal:
    name = "bm25"
    field = "bm25"

    def scores(self, ctx: QueryContext) -> Scores:
        return ctx.catalog.lexical.scores(ctx.query)

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        """Seed 003's blend: BM25 counts in the fusion as much as its confidence (its tokens matched well); a
        query in other words than the tools' own leaves the ranking to the vectors."""
        s = ctx.settings
        return bm25_confidence(scores, ctx.pool, s.bm25_confidence_scale) if s.fusion_bm25_by_confidence else 1.0


BM25 = Bm25Signal()
