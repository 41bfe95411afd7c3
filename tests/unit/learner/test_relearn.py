"""Deriving the learnt state again with a new model's vectors (pure parts): the review index folded from the log
in log order, and the reviews' listwise steps replayed with the credits counted again from nothing."""

from uuid import uuid4

import numpy as np

from toolsel.services.learner.relearn import folded, replayed
from toolsel.services.learner.review_index import unit
from toolsel.services.learner.reviews import Lesson
from toolsel.services.learner.usage import NEGATIVE, POSITIVE, Example, Listwise, UsageRules

LISTWISE = Listwise(rate=0.1, sharpness=10.0, max_norm=1.0, centred=True)
RULES = UsageRules("tenant", 64, 64.0, 1, LISTWISE)
OSLO, ROME = unit(np.array([1.0, 0.2, 0.0], dtype=np.float32)), unit(np.array([0.0, 1.0, 0.3], dtype=np.float32))
VECTORS = {"snow in Oslo": OSLO, "rain in Rome": ROME}


def review(query: str, actor: str, good: int = 1, bad: int = 2) -> list[Lesson]:
    """One review of a selection offering tools ``good`` (perfect) and ``bad`` (unrelated) for ``query``."""
    selection, event = uuid4(), uuid4()
    return [
        Lesson(("t", actor, tool), Example(tool, "t", event, polarity, query, selection, similarity))
        for tool, polarity, similarity in ((good, POSITIVE, 0.4), (bad, NEGATIVE, 0.5))
    ]


def test_one_review_steps_its_tools_apart_along_its_query() -> None:
    residuals, totals = replayed([review("snow in Oslo", "a")], VECTORS, RULES)
    coefficients = LISTWISE.coefficients(np.array([0.4, 0.5]), np.array([True, False]))
    assert np.allclose(residuals[(1, "t")], LISTWISE.rate * coefficients[0] * OSLO)
    assert np.allclose(residuals[(2, "t")], LISTWISE.rate * coefficients[1] * OSLO)
    assert set(totals) == {"t"}
    assert totals["t"][1] == 1
    assert np.allclose(totals["t"][0], OSLO)


def test_an_actor_out_of_credits_teaches_nothing_more() -> None:
    once, _ = replayed([review("snow in Oslo", "a")], VECTORS, RULES)
    twice, totals = replayed([review("snow in Oslo", "a"), review("rain in Rome", "a")], VECTORS, RULES)
    assert once.keys() == twice.keys()
    assert all(np.allclose(once[k], twice[k]) for k in once)
    assert totals["t"][1] == 1
    other, _ = replayed([review("snow in Oslo", "a"), review("rain in Rome", "b")], VECTORS, RULES)
    assert not np.allclose(other[(1, "t")], once[(1, "t")])


def test_a_later_review_steps_from_the_scopes_centre_before_it() -> None:
    residuals, totals = replayed([review("snow in Oslo", "a"), review("rain in Rome", "b")], VECTORS, RULES)
    first, _ = replayed([review("snow in Oslo", "a")], VECTORS, RULES)
    coefficients = LISTWISE.coefficients(np.array([0.4, 0.5]), np.array([True, False]))
    assert np.allclose(residuals[(1, "t")], first[(1, "t")] + LISTWISE.rate * coefficients[0] * (ROME - OSLO))
    assert totals["t"][1] == 2


def test_without_listwise_steps_nothing_is_replayed() -> None:
    rules = UsageRules("tenant", 64, 64.0, 1, None)
    assert replayed([review("snow in Oslo", "a")], VECTORS, rules) == ({}, {})


def test_the_index_is_the_log_folded_in_log_order() -> None:
    near = unit(OSLO + np.array([0.0, 0.0, 0.05], dtype=np.float32))
    vectors = {"snow in Oslo": OSLO, "snowfall in Oslo": near, "rain in Rome": ROME}
    log = [
        {"tool_id": 1, "scope": "t", "query": "snow in Oslo", "fitness": 1.0},
        {"tool_id": 1, "scope": "t", "query": "rain in Rome", "fitness": 0.0},
        {"tool_id": 1, "scope": "t", "query": "snowfall in Oslo", "fitness": 0.5},
        {"tool_id": 2, "scope": "t", "query": "rain in Rome", "fitness": 1.0},
    ]
    entries = folded(log, vectors, 0.9)  # type: ignore[arg-type]
    assert [(t, s, n, f) for t, s, _, f, n in entries] == [(1, "t", 2, 0.75), (1, "t", 1, 0.0), (2, "t", 1, 1.0)]
    assert np.allclose(entries[0][2], unit(OSLO + near))
