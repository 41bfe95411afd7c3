"""Vector cosine: clipped at 0, 0 without a vector on either side."""

import numpy as np
import pytest

from tests.unit.selector.factory import T, axis, catalog, query_context
from toolsel.services.selector.signals.vector import VECTOR

CAT = catalog([T("a", "a", 0), T("b", "b", 1), T("c", "c", 2)])


def test_cosine_of_the_query_with_each_tool_clipped_at_zero() -> None:
    query = (axis(0) * 0.6 + axis(1) * 0.8 - axis(2) * 0.5).astype(np.float32)
    assert VECTOR.scores(query_context(CAT, vector=query)).tolist() == pytest.approx([0.6, 0.8, 0.0])


def test_zero_for_a_tool_without_a_vector_and_for_a_query_without_one() -> None:
    no_vector = catalog([T("a", "a", 0)])
    object.__setattr__(no_vector, "has_vector", np.array([False]))
    assert VECTOR.scores(query_context(no_vector, vector=axis(0))).tolist() == [0.0]
    assert VECTOR.scores(query_context(CAT, vector=None)).tolist() == [0.0, 0.0, 0.0]


def test_trusted_fully() -> None:
    assert VECTOR.trust(np.zeros(3), query_context(CAT)) == 1.0
