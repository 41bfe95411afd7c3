"""The usage memory's arithmetic: recency weights, the bounded recency-weighted centroid, vectors per scope."""

import numpy as np
import pytest

from services.learner.usage import (
    NEGATIVE,
    POSITIVE,
    UsageRules,
    centroid,
    recency_weights,
    usage_vectors,
)


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


RULES = UsageRules("tenant", examples_per_tool=4, half_life=2.0)


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
    assert usage_vectors({(1, "a"): [(NEGATIVE, _unit(1, 0), None)]}, RULES) == []


def test_vectors_are_per_tool_and_scope_with_their_negatives() -> None:
    examples = {
        (1, "a"): [(POSITIVE, _unit(1, 0), None), (NEGATIVE, _unit(0, 1), None), (POSITIVE, _unit(1, 0), None)],
        (1, "b"): [(POSITIVE, _unit(0, 1), None)],
    }
    rows = usage_vectors(examples, RULES)
    assert [(t, s, p, n) for t, s, _, _, p, n, _ in rows] == [(1, "a", 2, 1), (1, "b", 1, 0)]
    assert rows[0][2].tolist() == pytest.approx([1.0, 0.0])
    negative = rows[0][3]
    assert negative is not None
    assert negative.tolist() == pytest.approx([0.0, 1.0])
    assert rows[1][3] is None


def test_each_polarity_keeps_at_most_the_bound() -> None:
    many = [(POSITIVE, _unit(1, 0), None)] * 10 + [(NEGATIVE, _unit(0, 1), None)] * 10
    (row,) = usage_vectors({(1, "a"): many}, RULES)
    assert (row[4], row[5]) == (4, 4)


@pytest.mark.parametrize(("sharing", "scope"), [("tenant", "acme"), ("global", "*")])
def test_a_tenants_usage_is_kept_in_its_own_scope_unless_shared(sharing: str, scope: str) -> None:
    assert UsageRules(sharing, 64, 64.0).scope("acme") == scope  # type: ignore[arg-type]


def test_learnt_words_are_the_newest_kept_positives_that_have_words() -> None:
    found = [
        (POSITIVE, _unit(1, 0), "newest"),
        (NEGATIVE, _unit(0, 1), "a bad one"),
        (POSITIVE, _unit(1, 0), None),
        (POSITIVE, _unit(1, 0), "older"),
        (POSITIVE, _unit(1, 0), "kept"),
        (POSITIVE, _unit(1, 0), "beyond the bound"),
    ]
    (row,) = usage_vectors({(1, "a"): found}, RULES)
    assert list(row[6]) == ["newest", "older", "kept"]
