"""What reviews may teach the usage memory (pure): one actor's reviews teach a tool at most its credits, whatever
their verdicts, in event order; a lesson left out leaves its ranking to the tools still in it."""

from uuid import UUID, uuid4

import numpy as np

from toolsel.services.learner.reviews import Lesson, credited, step_start
from toolsel.services.learner.usage import NEGATIVE, POSITIVE, Example, Listwise, stepped
from toolsel.store.learning import CreditKey

LIMIT = 3
SESSION: CreditKey = ("acme", "session:s1", 1)


def _lesson(credit: CreditKey, polarity: int = POSITIVE, selection: UUID | None = None) -> Lesson:
    example = Example(credit[2], "acme", uuid4(), polarity, "weather in Oslo", selection or uuid4(), 0.5)
    return Lesson(credit, example)


def test_a_fourth_review_from_the_same_actor_on_the_same_tool_teaches_nothing() -> None:
    lessons = [_lesson(SESSION) for _ in range(4)]
    examples, credits = credited(lessons, {}, LIMIT)
    assert examples == [lesson.example for lesson in lessons[:LIMIT]]
    assert credits == {SESSION: LIMIT}


def test_another_actor_or_another_tool_still_teaches() -> None:
    other_actor, other_tool = ("acme", "session:s2", 1), ("acme", "session:s1", 2)
    lessons = [*(_lesson(SESSION) for _ in range(LIMIT + 1)), _lesson(other_actor), _lesson(other_tool)]
    examples, credits = credited(lessons, {}, LIMIT)
    assert examples == [lesson.example for lesson in [*lessons[:LIMIT], *lessons[-2:]]]
    assert credits == {SESSION: LIMIT, other_actor: 1, other_tool: 1}


def test_both_polarities_take_a_credit() -> None:
    lessons = [_lesson(SESSION, NEGATIVE), _lesson(SESSION, POSITIVE), _lesson(SESSION, NEGATIVE)]
    lessons += [_lesson(SESSION, POSITIVE), _lesson(SESSION, NEGATIVE)]
    examples, credits = credited(lessons, {}, LIMIT)
    assert [e.polarity for e in examples] == [NEGATIVE, POSITIVE, NEGATIVE]
    assert credits == {SESSION: LIMIT}


def test_credits_used_before_are_remembered_and_left_as_they_were() -> None:
    used = {SESSION: LIMIT - 1}
    examples, credits = credited([_lesson(SESSION), _lesson(SESSION)], used, LIMIT)
    assert len(examples) == 1
    assert credits == {SESSION: LIMIT}
    assert used == {SESSION: LIMIT - 1}


def test_a_ranking_steps_with_the_lessons_left_in_it() -> None:
    """One review: A and B perfect, C unrelated; A's credits are spent, so B and C are ranked without it."""
    selection, query = uuid4(), np.array([1.0, 0.0], dtype=np.float32)
    a, b, c = (("acme", "session:s1", tool) for tool in (1, 2, 3))
    review = [_lesson(a, POSITIVE, selection), _lesson(b, POSITIVE, selection), _lesson(c, NEGATIVE, selection)]
    examples, _ = credited(review, {a: LIMIT}, LIMIT)
    moved = stepped(examples, {"weather in Oslo": query}, {}, Listwise(rate=0.1, sharpness=10.0, max_norm=1.0))
    assert set(moved) == {(2, "acme"), (3, "acme")}
    assert moved[2, "acme"] @ query > 0 > moved[3, "acme"] @ query
    # left alone (C's credits spent too), B steps nothing
    examples, _ = credited(review, {a: LIMIT, c: LIMIT}, LIMIT)
    assert stepped(examples, {"weather in Oslo": query}, {}, Listwise(0.1, 10.0, 1.0)) == {}


def _offered(needs: list[str | None]) -> dict[str, object]:
    return {"keys": ["a/mine", "s/shared"], "needs": needs, "similarities": [0.7, 0.4]}


def test_a_review_steps_from_the_recorded_cosine_of_a_request_that_was_not_split() -> None:
    plain = _offered([None, None])
    assert [step_start(plain, k) for k in ("a/mine", "s/shared", "x/not-offered")] == [0.7, 0.4, None]
    split = _offered(["book a table", None])
    assert [step_start(split, k) for k in ("a/mine", "s/shared")] == [None, None]
