"""The historical recommendation: tools that helped on past queries near this one, as a retrieval signal."""

import numpy as np
import pytest

from tests.unit.selector.factory import T, axis, catalog, query_context, reviews
from toolsel.services.selector.signals.history import HISTORY

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])
LOOKUP = reviews(CAT, [("p/a", 0, 1.4), ("p/b", 0, 0.75)])


def test_recommends_the_tools_that_helped_near_the_query() -> None:
    # p/a helped (1.4) on a past query identical to this one; p/b did not (0.75)
    assert HISTORY.scores(query_context(CAT, vector=axis(0), lookup=LOOKUP)).tolist() == pytest.approx([0.4, 0.0])


def test_nothing_without_a_query_vector_or_an_index() -> None:
    assert HISTORY.scores(query_context(CAT, vector=None, lookup=LOOKUP)).tolist() == [0.0, 0.0]
    assert HISTORY.scores(query_context(CAT, vector=axis(0), lookup=None)).tolist() == [0.0, 0.0]


def test_no_weight_when_it_recommends_nothing() -> None:
    ctx = query_context(CAT)
    assert HISTORY.trust(np.zeros(2), ctx) == 0.0
    assert HISTORY.trust(np.array([0.0, 0.2]), ctx) == 1.0
