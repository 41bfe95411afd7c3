"""Popularity: the usage percentile computed with the catalog copy (seed 001)."""

import numpy as np

from services.selector.signals.popularity import POPULARITY
from tests.unit.selector.factory import T, catalog, rerank_context

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])
object.__setattr__(CAT, "popularity", np.array([0.5, 1.0]))


def test_is_the_catalogs_usage_percentile() -> None:
    assert POPULARITY.scores(rerank_context(CAT)).tolist() == [0.5, 1.0]
