"""The usage memory's arithmetic: recency weights, the bounded recency-weighted centroid, vectors per scope, the
listwise steps of reviews on the residuals; a failing model told from a query it fails on."""

from collections.abc import Sequence
from uuid import uuid4

import numpy as np
import pytest

from toolsel.messaging import Unavailable, transient
from toolsel.services.learner.usage import (
    NEGATIVE,
    POSITIVE,
    Example,
    Listwise,
    UsageRules,
    centres,
    centroid,
    embedded,
    ranked_totals,
    rankings,
    recency_weights,
    stepped,
    usage_vectors,
)


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


RULES = UsageRules("tenant", examples_per_tool=4, half_life=2.0, credits_per_actor=3)


def test_an_example_half_life_newer_examples_old_weighs_half() -> None:
    assert recency_weights(5, 2.0).tolist() == pytest.approx([1.0, 0.5**0.5, 0.5, 0.5**1.5, 0.25])


def test_the_centroid_is_unit_and_leans_to_the_newest_examples() -> None:
    newest, older = _unit(1, 0), _unit(0, 1)
    c = centroid([newest, older], limit=64, half_life=1.0)
    assert c is not None
    assert float(np.linalg.norm(c)) == pytest.approx(1.0)
    assert c @ newest > c @ older
    assert c.tolist() == pytest.approx(_unit(1.0, 0.5).tolist())


def test_only_the_newest_limit_examples_count() -> None:
    c = centroid([_unit(1, 0), _unit(1, 0), _unit(0, 1)], limit=2, half_life=1.0)
    assert c is not None
    assert c.tolist() == pytest.approx([1.0, 0.0])


def test_no_examples_or_ones_that_cancel_have_no_centroid() -> None:
    assert centroid([], limit=4, half_life=1.0) is None
    assert centroid([_unit(1, 0), _unit(-1, 0)], limit=4, half_life=1e9) is None


def test_a_tool_with_only_negative_examples_has_no_vector_yet() -> None:
    assert usage_vectors({(1, "a"): [(NEGATIVE, _unit(1, 0), None)]}, RULES, {}) == []


def test_vectors_are_per_tool_and_scope_with_their_negatives() -> None:
    examples = {
        (1, "a"): [(POSITIVE, _unit(1, 0), None), (NEGATIVE, _unit(0, 1), None), (POSITIVE, _unit(1, 0), None)],
        (1, "b"): [(POSITIVE, _unit(0, 1), None)],
    }
    residual = _unit(0, 1)
    rows = usage_vectors(examples, RULES, {(1, "b"): residual})
    assert [(r.tool_id, r.scope, r.positives, r.negatives) for r in rows] == [(1, "a", 2, 1), (1, "b", 1, 0)]
    assert (rows[0].residual, rows[1].residual) == (None, residual)  # none given: the stored one is kept
    assert rows[0].centroid.tolist() == pytest.approx([1.0, 0.0])
    negative = rows[0].negative_centroid
    assert negative is not None
    assert negative.tolist() == pytest.approx([0.0, 1.0])
    assert rows[1].negative_centroid is None


def test_each_polarity_keeps_at_most_the_bound() -> None:
    many = [(POSITIVE, _unit(1, 0), None)] * 10 + [(NEGATIVE, _unit(0, 1), None)] * 10
    (row,) = usage_vectors({(1, "a"): many}, RULES, {})
    assert (row.positives, row.negatives) == (4, 4)


@pytest.mark.parametrize(("sharing", "scope"), [("tenant", "acme"), ("global", "*")])
def test_a_tenants_usage_is_kept_in_its_own_scope_unless_shared(sharing: str, scope: str) -> None:
    assert UsageRules(sharing, 64, 64.0, 3).scope("acme") == scope  # type: ignore[arg-type]


def test_learnt_words_are_the_newest_kept_positives_that_have_words() -> None:
    found = [
        (POSITIVE, _unit(1, 0), "newest"),
        (NEGATIVE, _unit(0, 1), "a bad one"),
        (POSITIVE, _unit(1, 0), None),
        (POSITIVE, _unit(1, 0), "older"),
        (POSITIVE, _unit(1, 0), "kept"),
        (POSITIVE, _unit(1, 0), "beyond the bound"),
    ]
    (row,) = usage_vectors({(1, "a"): found}, RULES, {})
    assert list(row.words) == ["newest", "older", "kept"]


STEP = Listwise(rate=0.1, sharpness=10.0, max_norm=1.0)


def test_a_step_moves_the_verdicts_share_against_the_softmax() -> None:
    similarities = np.array([0.5, 0.3, 0.3])
    c = STEP.coefficients(similarities, np.array([False, True, False]))
    p = np.exp(10 * similarities) / np.exp(10 * similarities).sum()
    assert c.tolist() == pytest.approx([-p[0], 1 - p[1], -p[2]])
    assert c.sum() == pytest.approx(0.0)  # what one gains, the others lose


def test_no_step_without_both_a_relevant_and_an_irrelevant_tool() -> None:
    similarities = np.array([0.5, 0.3])
    assert not STEP.coefficients(similarities, np.array([True, True])).any()
    assert not STEP.coefficients(similarities, np.array([False, False])).any()


def test_a_hostile_recorded_cosine_cannot_overflow_the_step() -> None:
    c = STEP.coefficients(np.array([1.7e308, -1.7e308, 0.0]), np.array([False, True, False]))
    assert np.isfinite(c).all()
    assert c.tolist() == pytest.approx(STEP.coefficients(np.array([2.0, -2.0, 0.0]), np.array([False, True, False])))


def test_a_residual_is_held_within_its_bound() -> None:
    assert np.linalg.norm(STEP.held(np.array([3.0, 4.0]))) == pytest.approx(1.0)
    assert STEP.held(np.array([0.3, 0.4])).tolist() == [0.3, 0.4]


def _reviewed(selection: object, tool: int, polarity: int, similarity: float | None, query: str = "q") -> Example:
    return Example(tool, "acme", uuid4(), polarity, query, selection, similarity)  # type: ignore[arg-type]


def test_a_review_moves_the_relevant_tool_towards_its_query_and_the_others_away() -> None:
    selection, q = uuid4(), _unit(1, 1)
    examples = [_reviewed(selection, 1, NEGATIVE, 0.6), _reviewed(selection, 2, POSITIVE, 0.4)]
    moved = stepped(examples, {"q": q}, {}, STEP)
    assert set(moved) == {(1, "acme"), (2, "acme")}
    assert float(moved[(2, "acme")] @ q) > 0 > float(moved[(1, "acme")] @ q)
    again = stepped(examples, {"q": q}, moved, STEP)  # a second review starts from where the first left them
    assert float(again[(2, "acme")] @ q) > float(moved[(2, "acme")] @ q)


def test_a_ranking_already_right_moves_less_than_a_wrong_one() -> None:
    q = _unit(1, 0)
    right = stepped([_reviewed(1, 1, POSITIVE, 0.9), _reviewed(1, 2, NEGATIVE, 0.1)], {"q": q}, {}, STEP)
    wrong = stepped([_reviewed(2, 1, POSITIVE, 0.1), _reviewed(2, 2, NEGATIVE, 0.9)], {"q": q}, {}, STEP)
    assert 0 < float(right[(1, "acme")] @ q) < float(wrong[(1, "acme")] @ q)


def test_each_part_of_a_compound_query_is_its_own_ranking() -> None:
    selection = uuid4()
    examples = [
        _reviewed(selection, 1, POSITIVE, 0.5, "book a table"),
        _reviewed(selection, 2, POSITIVE, 0.5, "check the weather"),  # alone in its part: nothing to tell apart
        _reviewed(selection, 3, NEGATIVE, 0.5, "book a table"),
    ]
    moved = stepped(examples, {"book a table": _unit(1, 0), "check the weather": _unit(0, 1)}, {}, STEP)
    assert set(moved) == {(1, "acme"), (3, "acme")}


def test_a_flood_of_reviews_moves_a_tool_at_most_its_bound() -> None:
    q, residual = _unit(1, 0), {}
    for _ in range(500):
        selection = uuid4()
        residual = stepped(
            [_reviewed(selection, 1, POSITIVE, 0.0), _reviewed(selection, 2, NEGATIVE, 0.0)], {"q": q}, residual, STEP
        )
    assert float(np.linalg.norm(residual[(1, "acme")])) == pytest.approx(1.0)
    assert float(np.linalg.norm(residual[(2, "acme")])) == pytest.approx(1.0)


def test_a_lone_example_ranks_nothing_and_each_ranking_counts_its_query_once() -> None:
    first, second, q, r = uuid4(), uuid4(), _unit(1, 0), _unit(0, 1)
    examples = [
        _reviewed(first, 1, POSITIVE, 0.5, "q"),
        _reviewed(first, 2, NEGATIVE, 0.4, "q"),
        _reviewed(second, 1, POSITIVE, None, "r"),  # an outcome's call: alone in its selection
    ]
    assert list(rankings(examples)) == [(first, "acme", "q")]
    [(scope, (total, n))] = ranked_totals(examples, {"q": q, "r": r}).items()
    assert (scope, total.tolist(), n) == ("acme", q.tolist(), 1)


def test_the_centre_is_the_mean_of_the_queries_ranked_before() -> None:
    got = centres({"acme": (np.array([2.0, 1.0], dtype=np.float32), 2), "new": (np.zeros(2, dtype=np.float32), 0)})
    assert got["acme"].tolist() == pytest.approx([1.0, 0.5])
    assert "new" not in got  # nothing ranked yet: its first rankings step along their queries


def test_a_centred_step_leaves_out_what_every_query_of_the_scope_shares() -> None:
    shared, own = _unit(1, 0), _unit(0, 1)
    q = (0.8 * shared + 0.6 * own).astype(np.float32)
    examples = [_reviewed(1, 1, POSITIVE, 0.3), _reviewed(1, 2, NEGATIVE, 0.3)]
    plain = stepped(examples, {"q": q}, {}, STEP)
    centred = stepped(examples, {"q": q}, {}, STEP, {"acme": (0.8 * shared).astype(np.float32)})
    assert float(plain[(2, "acme")] @ shared) < 0  # pushed away from every query of the scope
    assert float(centred[(2, "acme")] @ shared) == pytest.approx(0.0, abs=1e-7)
    assert float(centred[(2, "acme")] @ own) < 0 < float(centred[(1, "acme")] @ own)


def test_a_ranking_without_a_recorded_cosine_steps_nothing() -> None:
    selection = uuid4()
    examples = [_reviewed(selection, 1, POSITIVE, 0.5), _reviewed(selection, 2, NEGATIVE, None)]
    assert rankings(examples) == {}
    assert stepped(examples, {"q": _unit(1, 0)}, {}, STEP) == {}


async def _ones(queries: Sequence[str]) -> np.ndarray:
    return np.ones((len(queries), 2), dtype=np.float32)


async def test_queries_are_embedded_each_by_its_text() -> None:
    vectors = await embedded(_ones, ["a", "b"])
    assert sorted(vectors) == ["a", "b"]
    assert await embedded(_ones, []) == {}


async def test_a_model_that_fails_whatever_it_is_given_is_unavailable_a_transient_failure() -> None:
    async def out_of_memory(queries: Sequence[str]) -> np.ndarray:
        raise MemoryError("onnxruntime: Failed to allocate memory")

    with pytest.raises(Unavailable, match="MemoryError: onnxruntime: Failed to allocate memory") as raised:
        await embedded(out_of_memory, ["weather in Oslo"])
    assert transient(raised.value)


async def test_a_failure_a_probe_passes_is_raised_as_it_is_a_querys_own() -> None:
    async def fails_on_one(queries: Sequence[str]) -> np.ndarray:
        if "poison" in queries:
            raise ValueError("cannot embed poison")
        return await _ones(queries)

    with pytest.raises(ValueError, match="cannot embed poison"):
        await embedded(fails_on_one, ["poison", "weather in Oslo"])
