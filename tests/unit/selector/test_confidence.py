import math

import numpy as np
import pytest

from toolsel.services.selector.confidence import TERMS, Signals, best_rank, bm25_match, confidence, lead, terms
from toolsel.services.selector.stages import top_n

COEF = {
    "intercept": -1.0,
    "cosine": 4.0,
    "bm25_match": 2.0,
    "log_rank": -1.0,
    "cosine_lead": 3.0,
    "log_length": 0.5,
    "compound": -0.5,
    "compound_log_rank": -1.0,
    "compound_first": 0.25,
}


def signals(cosine: float, match: float, rank: float, lead_: float = 0.0, length: int = 1) -> Signals:
    return Signals(np.array([cosine]), np.array([match]), np.array([rank]), np.array([lead_]), length)


def logistic(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def test_confidence_is_the_logistic_of_the_raw_signals() -> None:
    got = confidence(signals(0.5, 0.25, 2.0, -0.1), False, COEF)
    assert got[0] == pytest.approx(logistic(-1.0 + 4.0 * 0.5 + 2.0 * 0.25 - math.log(2.0) + 3.0 * -0.1 * 0.5))


def test_confidence_rises_with_cosine_match_and_lead_and_falls_with_rank() -> None:
    base = confidence(signals(0.4, 0.2, 3.0), False, COEF)[0]
    assert confidence(signals(0.6, 0.2, 3.0), False, COEF)[0] > base
    assert confidence(signals(0.4, 0.5, 3.0), False, COEF)[0] > base
    assert confidence(signals(0.4, 0.2, 3.0, 0.1), False, COEF)[0] > base
    assert confidence(signals(0.4, 0.2, 9.0), False, COEF)[0] < base


def test_a_longer_query_makes_the_same_signals_count_for_more() -> None:
    """A longer request's mean-pooled vector is further from any one tool: the same cosine is a better fit."""
    short = confidence(signals(0.4, 0.2, 1.0, length=20), False, COEF)[0]
    long = confidence(signals(0.4, 0.2, 1.0, length=400), False, COEF)[0]
    assert long == pytest.approx(logistic(-1.0 + 1.6 + 0.4 + 0.5 * math.log(400)))
    assert long > short
    assert confidence(signals(0.4, 0.2, 1.0, length=0), False, COEF)[0] == pytest.approx(logistic(1.0))


def test_a_lead_counts_by_how_near_the_query_the_tool_is() -> None:
    """Among tools that all miss the query, the one ahead is no likelier right: the lead counts times the cosine."""
    far = confidence(signals(0.05, 0.0, 1.0, 0.3), False, COEF)[0] - confidence(signals(0.05, 0.0, 1.0), False, COEF)[0]
    near = confidence(signals(0.6, 0.0, 1.0, 0.3), False, COEF)[0] - confidence(signals(0.6, 0.0, 1.0), False, COEF)[0]
    assert far < near / 4


def test_a_compound_request_has_its_own_intercept_rank_slope_and_first_tool_term() -> None:
    got = confidence(signals(0.5, 0.25, 2.0), True, COEF)
    assert got[0] == pytest.approx(logistic(-1.0 - 0.5 + 4.0 * 0.5 + 2.0 * 0.25 - 2.0 * math.log(2.0)))
    first = confidence(signals(0.5, 0.25, 1.0), True, COEF)
    assert first[0] == pytest.approx(logistic(-1.0 - 0.5 + 4.0 * 0.5 + 2.0 * 0.25 + 0.25))
    assert confidence(signals(0.5, 0.25, 1.0), False, COEF)[0] == pytest.approx(logistic(-1.0 + 2.0 + 0.5))


def test_the_terms_are_the_models_columns_in_order() -> None:
    row = terms(signals(0.5, 0.25, 1.0, 0.2, length=40), True)[0]
    assert dict(zip(TERMS, row.tolist(), strict=True)) == pytest.approx(
        {
            "intercept": 1.0,
            "cosine": 0.5,
            "bm25_match": 0.25,
            "log_rank": 0.0,
            "cosine_lead": 0.1,
            "log_length": math.log(40),
            "compound": 1.0,
            "compound_log_rank": 0.0,
            "compound_first": 1.0,
        }
    )
    assert terms(signals(0.5, 0.25, 4.0, length=40), False)[0].tolist()[6:] == [0.0, 0.0, 0.0]


def test_an_unranked_row_has_no_confidence_and_extremes_stay_in_bounds() -> None:
    wide = Signals(np.array([1e6, 0.9]), np.array([1e6, 0.0]), np.array([1.0, np.inf]), np.zeros(2), 10)
    assert confidence(wide, False, COEF).tolist() == [pytest.approx(1.0), 0.0]


def test_missing_coefficients_are_refused() -> None:
    lacking = {k: v for k, v in COEF.items() if k not in ("cosine_lead", "compound_first")}
    with pytest.raises(ValueError, match="cosine_lead, compound_first"):
        confidence(signals(0.0, 0.0, 1.0), False, lacking)


def test_the_lead_is_how_far_the_first_stands_ahead_and_the_others_trail() -> None:
    scores = np.array([1.0, 0.7, 0.2, 0.95])
    pool = np.array([True, True, True, False])  # the last row is outside the pool: it sets no bar
    assert lead(scores, pool, np.arange(4)).tolist() == pytest.approx([0.3, -0.3, -0.8, -0.05])
    assert lead(scores, pool, np.array([2, 0])).tolist() == pytest.approx([-0.8, 0.3])  # rows of a subset
    tied = np.array([1.0, 1.0, 0.5])
    assert lead(tied, np.ones(3, dtype=bool), np.arange(3)).tolist() == pytest.approx([0.0, 0.0, -0.5])
    assert lead(np.array([0.6]), np.array([True]), np.arange(1)).tolist() == pytest.approx([0.6])
    assert lead(np.array([0.6]), np.array([False]), np.arange(1)).tolist() == [0.0]


def test_bm25_match_is_zero_without_a_ceiling() -> None:
    assert bm25_match(np.array([2.0, 1.0]), 4.0).tolist() == [0.5, 0.25]
    assert bm25_match(np.array([2.0]), 0.0).tolist() == [0.0]


def test_best_rank_gives_each_part_of_a_compound_request_its_own_first_tool() -> None:
    pool = np.array([True, True, True, True])
    whole = np.array([0.9, 0.8, 0.7, 0.0])
    part = np.array([0.1, 0.2, 0.9, 0.0])
    rankings = [top_n(whole, pool, 2), top_n(part, pool, 2)]
    assert best_rank([whole, part], rankings, pool, np.arange(4)).tolist() == [1.0, 2.0, 1.0, np.inf]
    assert best_rank([whole, part], rankings, pool, np.array([2, 1])).tolist() == [1.0, 2.0]


def test_best_rank_of_a_plain_query_is_its_rank_within_the_pool() -> None:
    pool = np.array([True, False, True])
    scores = np.array([0.5, 0.9, 0.7])
    assert best_rank([scores], [top_n(scores, pool, 1)], pool, np.arange(3)).tolist() == [2.0, np.inf, 1.0]
