"""Popularity: the usage percentile among the tools the tenant sees, by its own calls (seed 001)."""

import numpy as np

from tests.unit.selector.factory import T, catalog, rerank_context
from toolsel.services.selector.signals.popularity import POPULARITY
from toolsel.services.selector.standing import Evidence


def test_is_the_usage_percentile_among_the_tools_the_tenant_sees() -> None:
    cat = catalog([T("a", "a", 0), T("b", "b", 1), T("c", "c", 2), T("theirs", "x", 3, tenant="other")])
    object.__setattr__(cat, "calls", np.array([3.0, 9.0, 0.0, 50.0]))
    # another tenant's much-used private tool is no part of this tenant's ranking
    assert POPULARITY.scores(rerank_context(cat)).tolist()[:3] == [0.5, 1.0, 0.0]


def test_a_tenants_own_calls_of_a_shared_tool_replace_the_base() -> None:
    cat = catalog([T("a", "a", 0), T("b", "b", 1)])
    object.__setattr__(cat, "calls", np.array([3.0, 9.0]))
    mine = Evidence(np.array([1]), np.array([False]), np.array([1.0]), np.array([1.0]), np.array([0.5]))
    object.__setattr__(cat, "evidence", {"default": mine})
    assert POPULARITY.scores(rerank_context(cat)).tolist() == [1.0, 0.5]
