"""BM25: the catalog's lexical index scores the query; its fusion weight follows its confidence (seed 003)."""

import numpy as np
import pytest

from tests.unit.selector.factory import T, catalog, query_context
from toolsel.services.selector.signals.bm25 import BM25

CAT = catalog([T("send_email", "send an email message", 0), T("get_weather", "weather forecast", 1)])


def test_scores_the_tools_whose_words_match() -> None:
    scores = BM25.scores(query_context(CAT, "weather forecast please"))
    assert scores[1] > 0
    assert scores[0] == 0


def test_trust_is_its_confidence_unless_told_to_trust_it_fully() -> None:
    scores = np.array([3.0, 0.0])
    assert BM25.trust(scores, query_context(CAT, bm25_confidence_scale=10.0)) == pytest.approx(0.3)
    assert BM25.trust(scores, query_context(CAT, fusion_bm25_by_confidence=False)) == 1.0
