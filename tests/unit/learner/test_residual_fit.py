"""The residual fit's pure parts: the problem read from store rows, the fit, the NDCG it is judged by, and the
judgement that keeps a fit only where it wins on the newest queries."""

import math
import uuid

import numpy as np
import pytest

from toolsel.blending import Blending, blend
from toolsel.services.learner.residual_fit import Examples, Fit, Problem, fitted, judge, ndcg_at_10, problem

DIM = 16
FIT = Fit(
    sharpness=20.0,
    steps=200,
    rate=1.0,
    max_norm=1.0,
    holdout_share=0.2,
    margin=0.005,
    blending=Blending(0.3, 8.0),
    examples_per_tool=64,
    half_life=64.0,
)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def crossed(rng: np.random.Generator, per_tool: int) -> tuple[np.ndarray, Examples]:
    """Four tools whose declared vectors point the wrong way: tool i's queries lie nearer tool (i + 1) % 4's
    vector, so the declared vectors rank each query's tool below another, and only a fit can put it first."""
    tools = unit(rng.normal(size=(4, DIM)))
    labels = np.repeat(np.arange(4), per_tool)
    rng.shuffle(labels)
    queries = unit(0.6 * tools[labels] + tools[(labels + 1) % 4] + 0.2 * rng.normal(size=(labels.size, DIM)))
    targets = np.zeros((labels.size, 4), dtype=np.float32)
    targets[np.arange(labels.size), labels] = 1.0
    return tools, Examples(queries, targets)


def learnt_from(tools: np.ndarray, examples: Examples) -> Problem:
    """Every tool learnt from its queries (each query taught its one tool)."""
    taught = [(int(np.argmax(target)), row) for row, target in enumerate(examples.targets)]
    movable = np.ones(len(tools), dtype=bool)
    return Problem(list(range(len(tools))), examples, tools, tools, movable, taught)


def test_the_fit_puts_each_querys_tool_first_moving_only_the_learnt_tools_within_the_bound() -> None:
    rng = np.random.default_rng(0)
    tools, examples = crossed(rng, 30)
    movable = np.array([True, True, True, True])
    wide = Fit(**{**FIT.__dict__, "max_norm": 3.0})  # far enough to turn each query's ranking round
    residuals = fitted(examples, tools, movable, wide)
    assert ndcg_at_10(examples, tools) < 0.7
    assert ndcg_at_10(examples, tools + residuals) > 0.95
    assert np.linalg.norm(residuals, axis=1).max() <= wide.max_norm + 1e-5
    bounded = fitted(examples, tools, movable, FIT)
    assert np.linalg.norm(bounded, axis=1).max() <= FIT.max_norm + 1e-5
    assert ndcg_at_10(examples, tools + bounded) > ndcg_at_10(examples, tools) + 0.1
    frozen = fitted(examples, tools, np.array([True, True, False, True]), FIT)
    assert not frozen[2].any(), "a tool the scope never learnt must keep its declared vector"


def test_ndcg_at_10_matches_its_definition_with_shared_targets() -> None:
    scored = np.eye(3, DIM, dtype=np.float32)
    queries = np.array([[0.1, 0.9, 0.5] + [0.0] * (DIM - 3), [0.9, 0.1, 0.5] + [0.0] * (DIM - 3)], dtype=np.float32)
    targets = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    # first query ranks 1, 2, 0: its tools 0 and 1 at ranks 3 and 1; second ranks 0, 2, 1: its tool 2 at rank 2
    first = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    second = 1 / math.log2(3)
    assert ndcg_at_10(Examples(queries, targets), scored) == pytest.approx((first + second) / 2)


def test_judge_keeps_a_fit_that_wins_on_the_newest_queries_and_refuses_one_that_does_not() -> None:
    rng = np.random.default_rng(1)
    tools, examples = crossed(rng, 40)
    # blended all declared (a floor of 1): the centroids cannot undo the crossing, only residuals can
    declared_only = Fit(**{**FIT.__dict__, "blending": Blending(1.0, 0.0)})
    won = judge(learnt_from(tools, examples), declared_only)
    assert won.wins
    assert won.fitted > won.blended + FIT.margin
    assert won.held_back == math.ceil(0.2 * len(examples))
    # the newest queries are all of a tool no older query taught, near its declared vector: the declared vectors
    # already rank them right, and fitting the older ones cannot do better
    others = examples.targets[:, 3] == 0
    newest_tool = np.zeros((10, 4), dtype=np.float32)
    newest_tool[:, 3] = 1.0
    shifted = Examples(
        np.vstack([examples.queries[others][:40], unit(tools[3] + 0.1 * rng.normal(size=(10, DIM)))]),
        np.vstack([examples.targets[others][:40], newest_tool]),
    )
    lost = judge(learnt_from(tools, shifted), FIT)
    assert not lost.wins
    assert lost.blended > 0.99
    assert not judge(learnt_from(tools, examples), Fit(**{**declared_only.__dict__, "margin": 1.0})).wins


def test_the_newest_queries_are_judged_over_vectors_blended_without_them() -> None:
    rng = np.random.default_rng(3)
    tools, examples = crossed(rng, 10)
    found = learnt_from(tools, examples)
    cut = 30
    before = found.base_before(cut, FIT)
    for tool in range(4):
        older = [examples.queries[row] for column, row in reversed(found.taught) if column == tool and row < cut]
        mean = unit(np.sum([0.5 ** (k / FIT.half_life) * v for k, v in enumerate(older)], axis=0))
        expected = blend(tools[tool : tool + 1], mean[None, :], FIT.blending.declared_weights(np.array([len(older)])))
        np.testing.assert_allclose(before[tool], expected[0], atol=1e-5)
    untaught = Problem(found.tool_ids, found.examples, tools, tools, found.movable, [])
    np.testing.assert_array_equal(untaught.base_before(cut, FIT), tools)


def test_problem_blends_the_learnt_tools_and_counts_a_query_asked_again_once() -> None:
    rng = np.random.default_rng(2)
    declared = unit(rng.normal(size=(3, DIM)))
    centroid = unit(rng.normal(size=DIM))
    visible = [(10, declared[0]), (11, declared[1]), (12, declared[2])]
    learnt = [(11, centroid, 4), (99, centroid, 1)]  # 99: learnt, but no longer visible
    asked, other = unit(rng.normal(size=DIM)), unit(rng.normal(size=DIM))
    positives = [
        (11, uuid.uuid4(), asked),
        (12, uuid.uuid4(), other),
        (10, uuid.uuid4(), asked),  # asked again later: one row, newest, served by 11 and 10
        (99, uuid.uuid4(), other),  # a tool the scope no longer sees teaches nothing
    ]
    blending = Blending(0.3, 8.0)
    found = problem(visible, learnt, positives, blending)
    assert found is not None
    assert found.tool_ids == [10, 11, 12]
    assert found.movable.tolist() == [False, True, False]
    expected = blend(declared[1:2], centroid[None, :], blending.declared_weights(np.array([4])))[0]
    np.testing.assert_allclose(found.base[1], expected, atol=1e-6)
    np.testing.assert_array_equal(found.base[[0, 2]], declared[[0, 2]])
    np.testing.assert_array_equal(found.examples.queries, np.vstack([other, asked]))
    np.testing.assert_array_equal(found.examples.targets, [[0.0, 0.0, 1.0], [0.5, 0.5, 0.0]])
    assert problem(visible, learnt, [(99, uuid.uuid4(), asked)], blending) is None
    assert problem([], learnt, positives, blending) is None
