"""The pure selection stages, with hand-computed expectations."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from toolsel.services.selector.splice import Groups
from toolsel.services.selector.stages import (
    COSINE_BLOCK_ROWS,
    beyond_candidates,
    choose,
    composite,
    cosine,
    cosines,
    deep_exploration_chance,
    deep_score,
    epoch_seconds,
    evidence,
    inject_pins,
    locate,
    member,
    narrow,
    page_categories,
    page_matches,
    posterior_mean,
    recency,
    rescored,
    rows_mask,
    tenant_mask,
    thompson,
    top_n,
    with_descendants,
)


def _rows(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _floats(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


# --- pages and categories -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "page", "expected"),
    [
        ("/billing", "/billing", True),
        ("/billing", "/billing/new", False),
        ("/billing", "/bill", False),
        ("/billing*", "/billing", True),
        ("/billing*", "/billing/invoices/3", True),
        ("/billing*", "/crm/billing", False),
        ("*/edit", "/invoices/3/edit", True),
        ("*/edit", "/edit", True),
        ("*/edit", "/invoices/edit/3", False),
        ("*invoice*", "/billing/invoices/3", True),
        ("*invoice*", "invoice", True),
        ("*invoice*", "/billing/bills", False),
    ],
)
def test_page_matches(pattern: str, page: str, expected: bool) -> None:
    assert page_matches(pattern, page) is expected


PARENTS: dict[tuple[str, str], str | None] = {
    ("billing", "money"): None,
    ("billing", "invoices"): "money",
    ("billing", "drafts"): "invoices",
    ("billing", "reports"): None,
    ("crm", "money"): None,
    ("crm", "invoices"): "money",
}


def test_with_descendants_adds_children_and_grandchildren_within_the_plugin() -> None:
    assert with_descendants({("billing", "money")}, PARENTS) == {
        ("billing", "money"),
        ("billing", "invoices"),
        ("billing", "drafts"),
    }


def test_with_descendants_of_a_leaf_is_the_leaf() -> None:
    assert with_descendants({("billing", "drafts")}, PARENTS) == {("billing", "drafts")}


def test_page_categories_expands_hierarchy_and_ignores_non_matching_mappings() -> None:
    mappings = [
        ("billing", "/billing*", "money", 0),
        ("billing", "/reports", "reports", 0),
        ("crm", "/crm*", "money", 0),
    ]
    assert page_categories(mappings, "/billing/new", PARENTS) == {
        ("billing", "money"),
        ("billing", "invoices"),
        ("billing", "drafts"),
    }
    assert page_categories(mappings, "/reports", PARENTS) == {("billing", "reports")}
    assert page_categories(mappings, "/nowhere", PARENTS) == set()


def test_empty_page_maps_to_nothing_even_with_a_catch_all() -> None:
    assert page_categories([("billing", "*", "money", 0)], "", PARENTS) == set()


def test_rows_mask_finds_the_rows_of_each_wanted_label() -> None:
    rows = Groups.of([("billing/invoices",), ("crm/invoices",), (), ("billing/money",), ("billing/invoices",)])
    assert rows["billing/invoices"].tolist() == [0, 4]
    mask = rows_mask(rows, 5, ["billing/invoices", "billing/absent"])
    assert mask.tolist() == [True, False, False, False, True]


def test_a_row_with_several_labels_is_found_by_each() -> None:
    rows = Groups.of([frozenset({"a", "b"}), frozenset(), frozenset({"b"})])
    assert rows_mask(rows, 3, ["a"]).tolist() == [True, False, False]
    assert rows_mask(rows, 3, ["b"]).tolist() == [True, False, True]


# --- masks ----------------------------------------------------------------------------------------------------


def test_tenant_mask_is_own_plus_shared_never_another() -> None:
    tenants = np.array(["acme", "*", "globex", "acme", "acme-eu"])
    assert tenant_mask(tenants, "acme").tolist() == [True, True, False, True, False]
    assert tenant_mask(tenants, "initech").tolist() == [False, True, False, False, False]


def test_narrow_applies_a_filter_that_leaves_something() -> None:
    mask = np.array([True, True, False, True])
    keep = np.array([False, True, True, False])
    narrowed, applied = narrow(mask, keep)
    assert applied is True
    assert narrowed.tolist() == [False, True, False, False]


def test_narrow_falls_back_when_the_filter_would_leave_nothing() -> None:
    mask = np.array([True, False, True])
    narrowed, applied = narrow(mask, np.array([False, True, False]))
    assert applied is False
    assert narrowed.tolist() == [True, False, True]


# --- scores ---------------------------------------------------------------------------------------------------


def test_cosine_of_unit_vectors() -> None:
    vectors = np.array([[1, 0], [0, 1], [0.6, 0.8], [-1, 0]], dtype=np.float32)
    query = np.array([0.6, 0.8], dtype=np.float32)
    assert cosine(vectors, query) == pytest.approx([0.6, 0.8, 1.0, -0.6])
    assert cosine(vectors, query).dtype == np.float64


def test_cosines_of_several_queries_in_one_product_are_each_querys_cosine() -> None:
    vectors = np.array([[1, 0], [0, 1], [0.6, 0.8], [-1, 0]], dtype=np.float32)
    queries = [np.array([0.6, 0.8], dtype=np.float32), np.array([0, -1], dtype=np.float32)]
    first, second = cosines(vectors, queries)
    assert first == pytest.approx([0.6, 0.8, 1.0, -0.6])
    assert second == pytest.approx([0.0, -1.0, -0.8, 0.0])
    assert first.dtype == np.float64
    assert first.flags.c_contiguous
    assert cosines(vectors, []) == []


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("rows", [COSINE_BLOCK_ROWS - 1, COSINE_BLOCK_ROWS, 2 * COSINE_BLOCK_ROWS + 7])
def test_cosines_by_blocks_of_rows_cover_every_row(rows: int, order: str) -> None:
    """Whichever the vectors' memory order (a catalog's: a dimension at a time)."""
    rng = np.random.default_rng(rows)
    vectors = np.asarray(rng.standard_normal((rows, 16)).astype(np.float32), order=order)
    queries = list(rng.standard_normal((3, 16)).astype(np.float32))
    for query, found in zip(queries, cosines(vectors, queries), strict=True):
        assert found.shape == (rows,)
        np.testing.assert_allclose(found, cosine(vectors, query), rtol=1e-5, atol=1e-5)


def test_top_n_best_first_within_mask() -> None:
    scores = _floats(0.1, 0.9, 0.5, 0.95, 0.7)
    mask = np.array([True, True, True, False, True])
    assert top_n(scores, mask, 3).tolist() == [1, 4, 2]
    assert top_n(scores, mask, 10).tolist() == [1, 4, 2, 0]


def test_top_n_ties_keep_row_order() -> None:
    scores = _floats(0.5, 0.9, 0.5, 0.9, 0.5)
    assert top_n(scores, np.ones(5, dtype=bool), 5).tolist() == [1, 3, 0, 2, 4]


def test_top_n_is_the_full_stable_sort_cut_to_n() -> None:
    rng = np.random.default_rng(5)
    for n in (1, 3, 10, 40):
        scores = rng.integers(0, 6, size=60).astype(np.float64)  # many ties around the cut
        mask = rng.random(60) < 0.7
        rows = np.flatnonzero(mask)
        expected = rows[np.argsort(-scores[rows], kind="stable")][:n]
        assert top_n(scores, mask, n).tolist() == expected.tolist()


def test_top_n_of_empty_mask_is_empty() -> None:
    result = top_n(_floats(1.0, 2.0), np.zeros(2, dtype=bool), 3)
    assert result.size == 0
    assert result.dtype == np.int64


def test_recency_decays_by_half_life() -> None:
    now = datetime(2024, 6, 1, tzinfo=UTC)
    last = [None, now, now - timedelta(days=14), now - timedelta(days=28), now + timedelta(days=1)]
    assert recency(epoch_seconds(last), now.timestamp(), half_life_days=14.0) == pytest.approx(
        [0.0, 1.0, 0.5, 0.25, 1.0]
    )


def test_posterior_mean() -> None:
    assert posterior_mean(_floats(1, 3, 9), _floats(1, 1, 1)) == pytest.approx([0.5, 0.75, 0.9])


def test_thompson_without_rng_is_the_posterior_mean() -> None:
    alpha, beta = _floats(1, 3, 2), _floats(1, 1, 6)
    assert thompson(alpha, beta, None) == pytest.approx([0.5, 0.75, 0.25])


def test_thompson_with_seeded_rng_is_reproducible_and_in_unit_interval() -> None:
    alpha, beta = _floats(1, 2, 5, 0.5), _floats(1, 7, 1, 0.5)
    first = thompson(alpha, beta, np.random.default_rng(42))
    second = thompson(alpha, beta, np.random.default_rng(42))
    assert first.tolist() == second.tolist()
    assert ((first > 0) & (first < 1)).all()
    assert not np.allclose(first, posterior_mean(alpha, beta))


def test_thompson_draws_the_prior_rows_uniformly() -> None:
    n = 20000
    draws = thompson(np.ones(n), np.ones(n), np.random.default_rng(3))
    assert abs(draws.mean() - 0.5) < 0.01
    assert abs(np.quantile(draws, 0.1) - 0.1) < 0.01
    mixed = thompson(_floats(1, 50, 1), _floats(1, 1, 50), np.random.default_rng(3))
    assert mixed[1] > 0.8
    assert mixed[2] < 0.2


def test_thompson_of_a_confident_posterior_stays_near_one() -> None:
    n = 2000
    draws = thompson(np.full(n, 1000.0), np.ones(n), np.random.default_rng(7))
    assert draws.mean() > 0.99
    assert draws.min() > 0.98


def test_composite_is_the_weighted_sum_of_the_signals() -> None:
    # 0.6*0.8 + 0.3*(0.6*0.5) + 0.1*1.0 = 0.48 + 0.09 + 0.1 = 0.67
    # 0.6*0.2 + 0.3*(1.0*1.0) + 0.1*0.0 = 0.12 + 0.3 + 0.0 = 0.42
    signals = {"relevance": _floats(0.8, 0.2), "quality": _floats(0.6 * 0.5, 1.0 * 1.0), "recency": _floats(1.0, 0.0)}
    result = composite(signals, {"relevance": 0.6, "quality": 0.3, "recency": 0.1}, {})
    assert result == pytest.approx([0.67, 0.42])


def test_composite_weighs_the_distance_from_neutral_and_skips_unweighted_signals() -> None:
    signals = {"relevance": _floats(0.5, 0.5), "fitness": _floats(1.4, 0.75), "popularity": _floats(9.0, 9.0)}
    result = composite(signals, {"relevance": 1.0, "fitness": 0.5}, {"fitness": 1.0})
    assert result == pytest.approx([0.5 + 0.5 * 0.4, 0.5 - 0.5 * 0.25])


def test_composite_bound_by_relevance_scales_every_other_part_by_it() -> None:
    # relevance 1.0 and 0.02; quality 0.5 (prior) and 1.0; fitness 1.0 and 1.4 (neutral 1)
    signals = {"relevance": _floats(1.0, 0.02), "quality": _floats(0.5, 1.0), "fitness": _floats(1.0, 1.4)}
    weights = {"relevance": 0.5, "quality": 0.35, "fitness": 0.3}
    result = composite(signals, weights, {"fitness": 1.0}, bound="relevance")
    assert result == pytest.approx([0.5 + 0.35 * 0.5, 0.02 * (0.5 + 0.35 + 0.3 * 0.4)])


def test_rescored_is_the_composite_computed_with_another_relevance() -> None:
    weights = {"relevance": 0.5, "quality": 0.35, "fitness": 0.3}
    learnt = {"quality": _floats(0.5, 1.0, 0.7), "fitness": _floats(1.0, 1.4, 0.9)}
    best, own = _floats(0.9, 0.6, 0.0), _floats(0.3, 0.6, 0.0)
    score = composite({"relevance": best, **learnt}, weights, {"fitness": 1.0}, bound="relevance")
    expected = composite({"relevance": own, **learnt}, weights, {"fitness": 1.0}, bound="relevance")
    assert rescored(score, best, own) == pytest.approx(expected)


# --- choosing -------------------------------------------------------------------------------------------------

EXPLOIT = _floats(0.9, 0.8, 0.7, 0.6, 0.5, 0.0)
EXPLORE = _floats(0.0, 0.0, 0.1, 0.2, 0.95, 1.0)
CANDIDATES = _rows(4, 2, 0, 3, 1)  # row 5 is not a candidate


def test_choose_exploits_k_minus_one_and_explores_the_best_sampled_of_the_rest() -> None:
    chosen, explored = choose(CANDIDATES, EXPLOIT, EXPLORE, k=3, exploration_slots=1)
    assert chosen.tolist() == [0, 1, 4]
    assert explored.tolist() == [4]


def test_choose_exploration_ignores_rows_outside_the_candidates() -> None:
    chosen, explored = choose(_rows(0, 1, 2, 3), EXPLOIT, EXPLORE, k=3, exploration_slots=1)
    assert chosen.tolist() == [0, 1, 3]
    assert explored.tolist() == [3]


def test_choose_without_exploration_slots_is_top_k() -> None:
    chosen, explored = choose(CANDIDATES, EXPLOIT, EXPLORE, k=3, exploration_slots=0)
    assert chosen.tolist() == [0, 1, 2]
    assert explored.size == 0


def test_choose_k_one_never_explores() -> None:
    chosen, explored = choose(CANDIDATES, EXPLOIT, EXPLORE, k=1, exploration_slots=1)
    assert chosen.tolist() == [0]
    assert explored.size == 0


def test_choose_with_more_slots_than_k_keeps_one_exploited() -> None:
    chosen, explored = choose(CANDIDATES, EXPLOIT, EXPLORE, k=3, exploration_slots=5)
    assert chosen.tolist() == [0, 4, 3]
    assert explored.tolist() == [4, 3]


def test_choose_with_fewer_candidates_than_k_returns_them_all() -> None:
    chosen, explored = choose(_rows(3, 1), EXPLOIT, EXPLORE, k=5, exploration_slots=1)
    assert chosen.tolist() == [1, 3]
    assert explored.size == 0
    assert chosen.dtype == np.int64


def test_choose_with_negative_exploration_slots_still_returns_at_most_k() -> None:
    # Settings.exploration_slots is an unvalidated int (TOOLSEL_EXPLORATION_SLOTS=-1 is accepted); a negative
    # count must not widen the answer past K: it should mean "no exploration", i.e. the plain top-K.
    chosen, explored = choose(CANDIDATES, EXPLOIT, EXPLORE, k=3, exploration_slots=-1)
    assert chosen.tolist() == [0, 1, 2]
    assert explored.size == 0


def test_choose_of_no_candidates_is_empty() -> None:
    chosen, explored = choose(_rows(), EXPLOIT, EXPLORE, k=3, exploration_slots=1)
    assert chosen.size == 0
    assert explored.size == 0


PIN_WEIGHT = np.array([0, 10, 0, 0, 50, 0, 30], dtype=np.int64)


def test_inject_pins_puts_pins_first_by_weight_and_may_exceed_k() -> None:
    assert inject_pins(_rows(0, 2, 3), _rows(1, 4, 6), PIN_WEIGHT, 10).tolist() == [4, 6, 1, 0, 2, 3]


def test_inject_pins_drops_a_chosen_pin_from_the_rest() -> None:
    assert inject_pins(_rows(0, 6, 3), _rows(1, 6), PIN_WEIGHT, 10).tolist() == [6, 1, 0, 3]


def test_inject_pins_equal_weights_keep_given_order() -> None:
    assert inject_pins(_rows(0), _rows(5, 2), PIN_WEIGHT, 10).tolist() == [5, 2, 0]


def test_inject_pins_shows_at_most_the_heaviest_given() -> None:
    assert inject_pins(_rows(0, 2), _rows(1, 4, 6), PIN_WEIGHT, 2).tolist() == [4, 6, 0, 2]
    assert inject_pins(_rows(0, 6), _rows(1, 6), PIN_WEIGHT, 0).tolist() == [0, 6]  # no room: the pin as chosen


def test_inject_no_pins_keeps_the_choice() -> None:
    assert inject_pins(_rows(3, 0, 2), _rows(), PIN_WEIGHT, 10).tolist() == [3, 0, 2]


def test_choose_beyond_fills_the_slots_from_the_rows_given() -> None:
    chosen, explored = choose(_rows(0, 1, 2), EXPLOIT, EXPLORE, k=3, exploration_slots=1, beyond=_rows(4, 5))
    assert chosen.tolist() == [0, 1, 5]
    assert explored.tolist() == [5]


def test_beyond_candidates_is_the_rest_of_the_ranking_to_its_depth() -> None:
    relevance = _floats(0.9, 0.8, 0.7, 0.6, 0.5, 0.4)
    mask = np.array([True, True, True, True, False, True])
    assert beyond_candidates(relevance, mask, _rows(0, 2), depth=4).tolist() == [1, 3]


def test_deep_exploration_fades_with_evidence() -> None:
    assert deep_exploration_chance(0.0) == 1.0
    assert deep_exploration_chance(10.0) == 0.5
    assert deep_exploration_chance(90.0) == pytest.approx(0.1)
    assert evidence(_floats(1.0, 5.0, 0.5), _floats(1.0, 2.0, 1.0), 1.0, 1.0).tolist() == [0.0, 5.0, 0.0]


def test_deep_score_is_the_draw_plus_half_the_scaled_relevance() -> None:
    assert deep_score(_floats(0.2, 0.9), _floats(0.4, 0.2)).tolist() == pytest.approx([0.7, 1.15])
    assert deep_score(_floats(0.2), _floats(0.0)).tolist() == [0.2]


def test_deep_score_scales_by_the_best_given_when_the_rows_are_a_subset() -> None:
    assert deep_score(_floats(0.2, 0.9), _floats(0.4, 0.2), top=0.8).tolist() == pytest.approx([0.45, 1.025])


def test_locate_gives_positions_in_the_subset_and_minus_one_outside() -> None:
    assert locate(_rows(2, 5, 9), _rows(9, 2, 3, 10, 5)).tolist() == [2, 0, -1, -1, 1]
    assert locate(_rows(), _rows(1)).tolist() == [-1]


def test_cosines_of_a_float64_query_are_float64_products() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((COSINE_BLOCK_ROWS + 3, 8)).astype(np.float32)
    query = rng.standard_normal(8)  # float64: the product is not cut to float32
    (found,) = cosines(vectors, [query])
    np.testing.assert_allclose(found, vectors.astype(np.float64) @ query, rtol=1e-12)


@given(
    hnp.arrays(np.int64, st.integers(0, 40), elements=st.integers(0, 30)),
    hnp.arrays(np.int64, st.integers(0, 40), elements=st.integers(0, 30)),
)
def test_member_is_numpys_isin(values: np.ndarray, of: np.ndarray) -> None:
    """Repeated values and unsorted, repeated or empty ``of`` included."""
    assert member(values, of).tolist() == np.isin(values, of).tolist()
