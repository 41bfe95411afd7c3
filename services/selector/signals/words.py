"""Learnt words: BM25 over the queries each tool served alone in the request's scope, so a tool is found in the
words its users ask for it with, not only in its author's. Each tool's score is weighed by how many queries
taught it (``Blending.learnt_weights``)."""

import numpy as np

from services.selector.retrieval import bm25_confidence
from services.selector.signals.base import QueryContext
from services.selector.stages import Scores


class WordsSignal:
    name = "words"
    field = "learnt_words"

    def scores(self, ctx: QueryContext) -> Scores:
        """0 for every row when the scope learnt no words yet."""
        if ctx.usage is None or ctx.usage.words is None:
            return np.zeros(len(ctx.catalog), dtype=np.float64)
        return ctx.usage.words.scores(ctx.query, len(ctx.catalog))

    def trust(self, scores: Scores, ctx: QueryContext) -> float:
        """As BM25's: as much as the query's words matched what was learnt (seed 003's confidence)."""
        return bm25_confidence(scores, ctx.pool, ctx.settings.bm25_confidence_scale)


WORDS = WordsSignal()
