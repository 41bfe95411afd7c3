"""Relevance: retrieval's fused score, as the composite weighs it."""

import numpy as np

from tests.unit.selector.factory import T, catalog, rerank_context
from toolsel.services.selector.signals.relevance import RELEVANCE

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])


def test_is_the_fused_retrieval_relevance() -> None:
    assert RELEVANCE.scores(rerank_context(CAT, relevance=np.array([0.9, 0.1]))).tolist() == [0.9, 0.1]
    assert RELEVANCE.neutral == 0.0
