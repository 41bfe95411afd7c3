"""Recency: halves every half-life since the last successful call in the request's context; 0 for never."""

import numpy as np
import pytest

from tests.unit.selector.factory import T, catalog, rerank_context
from toolsel.services.selector.signals.recency import RECENCY
from toolsel.settings import Settings

CAT = catalog([T("a", "a", 0), T("b", "b", 1), T("c", "c", 2)])
DAY = 86400.0


def test_decays_by_half_life_from_now() -> None:
    last_success = np.array([100 * DAY, 93 * DAY, np.nan])
    ctx = rerank_context(
        CAT, now_s=100 * DAY, last_success_s=last_success, settings=Settings(recency_half_life_days=7.0)
    )
    assert RECENCY.scores(ctx).tolist() == pytest.approx([1.0, 0.5, 0.0])
