"""Performance: latency and reliability as computed with the catalog copy (seed 001)."""

import numpy as np

from tests.unit.selector.factory import T, catalog, rerank_context
from toolsel.services.selector.signals.performance import PERFORMANCE

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])
object.__setattr__(CAT, "performance", np.array([0.25, 0.9]))


def test_is_the_catalogs_performance_score() -> None:
    assert PERFORMANCE.scores(rerank_context(CAT)).tolist() == [0.25, 0.9]
