import math

import numpy as np
import pytest

from services.selector.confidence import best_rank, bm25_match, confidence

COEF = {
    "intercept": -1.0,
    "cosine": 4.0,
    "bm25_match": 2.0,
    "log_rank": -1.0,
    "compound": -0.5,
    "compound_log_rank": -1.0,
}


def test_confidence_is_the_logistic_of_the_raw_signals() -> None:
    got = confidence(np.array([0.5]), np.array([0.25]), np.array([2.0]), False, COEF)
    z = -1.0 + 4.0 * 0.5 + 2.0 * 0.25 - math.log(2.0)
    assert got[0] == pytest.approx(1 / (1 + math.exp(-z)))


def test_confidence_rises_with_cosine_and_match_and_falls_with_rank() -> None:
    base = confidence(np.array([0.4]), np.array([0.2]), np.array([3.0]), False, COEF)[0]
    assert confidence(np.array([0.6]), np.array([0.2]), np.array([3.0]), False, COEF)[0] > base
    assert confidence(np.array([0.4]), np.array([0.5]), np.array([3.0]), False, COEF)[0] > base
    assert confidence(np.array([0.4]), np.array([0.2]), np.array([9.0]), False, COEF)[0] < base


def test_a_compound_request_has_its_own_intercept_and_rank_slope() -> None:
    got = confidence(np.array([0.5]), np.array([0.25]), np.array([2.0]), True, COEF)
    z = -1.0 - 0.5 + 4.0 * 0.5 + 2.0 * 0.25 - 2.0 * math.log(2.0)
    assert got[0] == pytest.approx(1 / (1 + math.exp(-z)))


def test_an_unranked_row_has_no_confidence_and_extremes_stay_in_bounds() -> None:
    got = confidence(np.array([1e6, 0.9]), np.array([1e6, 0.0]), np.array([1.0, np.inf]), False, COEF)
    assert got.tolist() == [pytest.approx(1.0), 0.0]


def test_missing_coefficients_are_refused() -> None:
    with pytest.raises(ValueError, match="log_rank"):
        confidence(np.zeros(1), np.zeros(1), np.ones(1), False, {"intercept": 0, "cosine": 1, "bm25_match": 1})


def test_bm25_match_is_zero_without_a_ceiling() -> None:
    assert bm25_match(np.array([2.0, 1.0]), 4.0).tolist() == [0.5, 0.25]
    assert bm25_match(np.array([2.0]), 0.0).tolist() == [0.0]


def test_best_rank_gives_each_part_of_a_compound_request_its_own_first_tool() -> None:
    pool = np.array([True, True, True, True])
    whole = np.array([0.9, 0.8, 0.7, 0.0])
    part = np.array([0.1, 0.2, 0.9, 0.0])
    assert best_rank([whole, part], pool, np.arange(4)).tolist() == [1.0, 2.0, 1.0, np.inf]
    assert best_rank([whole, part], pool, np.array([2, 1])).tolist() == [1.0, 2.0]


def test_best_rank_of_a_plain_query_is_its_rank_within_the_pool() -> None:
    pool = np.array([True, False, True])
    assert best_rank([np.array([0.5, 0.9, 0.7])], pool, np.arange(3)).tolist() == [2.0, np.inf, 1.0]
