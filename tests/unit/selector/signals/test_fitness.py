"""Historical fitness: how well each tool served past queries near this one; 1.0 is neutral."""

import pytest

from tests.unit.selector.factory import T, axis, catalog, rerank_context, reviews
from toolsel.services.selector.signals.fitness import FITNESS

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])
LOOKUP = reviews(CAT, [("p/a", 0, 1.4), ("p/b", 1, 0.35)])


def test_is_the_fitness_of_the_near_past_queries() -> None:
    # p/b's review is for an orthogonal query (similarity 0 < 0.5): neutral
    assert FITNESS.scores(rerank_context(CAT, vector=axis(0), reviews=LOOKUP)).tolist() == pytest.approx([1.4, 1.0])


def test_neutral_without_a_query_vector_or_an_index_and_weighed_from_neutral() -> None:
    assert FITNESS.scores(rerank_context(CAT, vector=None, reviews=LOOKUP)).tolist() == [1.0, 1.0]
    assert FITNESS.scores(rerank_context(CAT, vector=axis(0), reviews=None)).tolist() == [1.0, 1.0]
    assert FITNESS.neutral == 1.0
