"""Usage memory: merged by version, blended with the declared vectors, penalised near negative examples."""

import numpy as np
import pytest

from tests.unit.selector.factory import DIM, T, axis, catalog, usage_record
from toolsel.services.selector.usage import Blending, UsageMemory, blend, build_view, scope_of, usage_cosine

CAT = catalog([T("a", "a", 0), T("b", "b", 1), T("c", "c", 2)])


LEARNT = Blending(0.3, 0.0)
"""The least declared share for every learnt tool, however few its examples."""


def test_the_scope_is_the_tenant_unless_learning_is_shared() -> None:
    assert scope_of("acme", "tenant") == "acme"
    assert scope_of("acme", "global") == "*"


def test_blend_weighs_the_declared_vector_and_normalises() -> None:
    mixed = blend(axis(0).reshape(1, DIM), axis(1).reshape(1, DIM), 0.3)[0]
    assert np.linalg.norm(mixed) == pytest.approx(1.0)
    assert mixed[0] / mixed[1] == pytest.approx(0.3 / 0.7)
    no_declared = blend(np.zeros((1, DIM), dtype=np.float32), axis(1).reshape(1, DIM), 0.3)[0]
    assert no_declared.tolist() == axis(1).tolist()


def test_the_declared_share_shrinks_with_the_examples_down_to_its_floor() -> None:
    weights = Blending(0.3, 8.0).declared_weights(np.array([0, 1, 8, 24, 64]))
    assert weights.tolist() == pytest.approx([1.0, 8 / 9, 0.5, 0.3, 0.3])
    assert Blending(0.3, 0.0).declared_weights(np.array([1, 64])).tolist() == pytest.approx([0.3, 0.3])


def test_a_tool_learnt_from_one_query_keeps_mostly_its_declared_vector() -> None:
    memory = UsageMemory()
    # a is declared along axis 0
    memory.merge([usage_record("p/a", 1, 1, positives=1), usage_record("p/b", 0, 2, positives=64)])
    view = memory.view(CAT, "acme", Blending(0.3, 8.0))
    assert view is not None
    few, many = (view.scored[view.rows.tolist().index(r)] for r in (0, 1))
    assert few[0] / few[1] == pytest.approx(8.0)  # (8/9) declared against (1/9) learnt
    assert many[1] / many[0] == pytest.approx(0.3 / 0.7)  # b: declared axis 1 at the floor, learnt axis 0
    assert memory.view(CAT, "acme", Blending(0.3, 0.0)) is not view  # another blending builds another view


def test_merge_keeps_the_newest_version_of_each_tool_and_raises_the_watermark() -> None:
    memory = UsageMemory()
    assert memory.merge([usage_record("p/a", 1, 5), usage_record("p/b", 2, 3)]) == 2
    older_and_repeated = [usage_record("p/a", 2, 4), usage_record("p/a", 1, 5)]
    assert memory.merge(older_and_repeated) == 0
    assert memory.version == 5
    assert memory.scopes["acme"]["p/a"].centroid.tolist() == axis(1).tolist()
    assert memory.merge([usage_record("p/a", 2, 6)]) == 1
    assert memory.scopes["acme"]["p/a"].centroid.tolist() == axis(2).tolist()


def test_a_view_covers_the_scope_s_tools_in_this_catalog_and_is_rebuilt_after_a_merge() -> None:
    memory = UsageMemory()
    assert memory.view(CAT, "acme", LEARNT) is None
    memory.merge([usage_record("p/b", 0, 1), usage_record("p/gone", 0, 2), usage_record("p/a", 0, 3, scope="other")])
    view = memory.view(CAT, "acme", LEARNT)
    assert view is not None
    assert view.rows.tolist() == [1]
    assert memory.view(CAT, "acme", LEARNT) is view
    memory.merge([usage_record("p/c", 1, 4)])
    rebuilt = memory.view(CAT, "acme", LEARNT)
    assert rebuilt is not view
    assert rebuilt is not None
    assert sorted(rebuilt.rows.tolist()) == [1, 2]


def test_a_query_closer_to_the_negatives_than_to_the_blend_loses_the_difference() -> None:
    assert build_view(CAT, {}, LEARNT).rows.size == 0
    memory = UsageMemory()
    memory.merge([usage_record("p/a", 0, 1, negative=1)])
    view = memory.view(CAT, "acme", Blending(0.0, 0.0))  # the blend is the centroid alone: axis 0
    assert view is not None
    near_negative = (axis(1) * 0.95 + axis(0) * 0.312).astype(np.float32)
    near_negative /= np.linalg.norm(near_negative)
    learnt, against = float(near_negative[0]), float(near_negative[1])
    assert usage_cosine(view, near_negative, 0.9).tolist() == pytest.approx([2 * learnt - against])
    assert usage_cosine(view, near_negative, 1.01).tolist() == pytest.approx([learnt])  # penalty off
    assert usage_cosine(view, axis(0), 0.9).tolist() == pytest.approx([1.0])  # far from the negatives


def test_a_residual_adds_its_product_with_the_query_to_the_cosine() -> None:
    memory = UsageMemory()
    residual = (0.5 * axis(1)).astype(np.float32)
    memory.merge([usage_record("p/a", 0, 1, residual=residual), usage_record("p/b", 0, 2)])
    view = memory.view(CAT, "acme", Blending(0.0, 0.0))  # both blends are axis 0
    assert view is not None
    query = ((axis(0) + axis(1)) / np.sqrt(2)).astype(np.float32)
    by_row = dict(zip(view.rows.tolist(), usage_cosine(view, query, 1.01).tolist(), strict=True))
    assert by_row[0] == pytest.approx(by_row[1] + 0.5 / np.sqrt(2))
