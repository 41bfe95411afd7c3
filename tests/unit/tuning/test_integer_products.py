"""The feed-forward products computed in integers, each token cut to 8 bits by its own range: the same products
within int8's precision, a row's result whatever rows it is batched with, the square products left in float32."""

import numpy as np
import pytest

pytest.importorskip("torch", reason="the export needs the tune extra")
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from toolsel.tuning.export import integer_products, quantised

WIDTH, WIDER = 32, 128


def _model() -> onnx.ModelProto:
    """Token vectors through a square product, then a widening and a narrowing one (a feed-forward layer), each
    weight stored as ``store_weights`` stores it: int8 with a scale per column, turned back by a Cast and a Mul."""
    rng = np.random.default_rng(0)
    stored, back, nodes = [], [], []
    x = "x"
    for name, shape in (("square", (WIDTH, WIDTH)), ("widen", (WIDTH, WIDER)), ("narrow", (WIDER, WIDTH))):
        ints, scale = quantised(rng.standard_normal(shape).astype(np.float32) / np.sqrt(shape[0]), 0)
        stored += [numpy_helper.from_array(ints, f"{name}_q"), numpy_helper.from_array(scale, f"{name}_scale")]
        back += [
            helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [name]),
        ]
        nodes.append(helper.make_node("MatMul", [x, name], [f"{name}_out"]))
        x = f"{name}_out"
    graph = helper.make_graph(
        [*back, *nodes],
        "products",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", WIDTH])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "tokens", WIDTH])],
        stored,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, {"x": x})[0]
    return out


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    flat_a, flat_b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    cosines: np.ndarray = (flat_a * flat_b).sum(1) / np.linalg.norm(flat_a, axis=1) / np.linalg.norm(flat_b, axis=1)
    return cosines


def test_the_feed_forward_products_are_computed_in_integers_and_the_square_one_in_float32() -> None:
    floats, integers = _model(), _model()
    integer_products(integers.graph)
    onnx.checker.check_model(integers)
    ops = [node.op_type for node in integers.graph.node]
    assert ops.count("MatMulInteger") == 2
    assert ops.count("MatMul") == 1
    assert {"widen", "narrow"}.isdisjoint(out for node in integers.graph.node for out in node.output)  # not made
    x = np.random.default_rng(1).standard_normal((3, 9, WIDTH)).astype(np.float32) * 4
    assert _cosines(_run(floats, x), _run(integers, x)).min() > 0.995


def test_a_token_s_result_does_not_depend_on_the_tokens_it_is_batched_with() -> None:
    model = _model()
    integer_products(model.graph)
    rng = np.random.default_rng(2)
    alone = rng.standard_normal((1, 5, WIDTH)).astype(np.float32)
    padded = np.concatenate([alone, np.zeros((1, 3, WIDTH), np.float32)], axis=1)  # padding rows
    batched = np.concatenate([padded, rng.standard_normal((1, 8, WIDTH)).astype(np.float32) * 50])  # a loud text
    assert np.array_equal(_run(model, alone)[0], _run(model, batched)[0, :5])


def test_a_graph_in_integers_is_left_as_it_is() -> None:
    model = _model()
    integer_products(model.graph)
    once = model.SerializeToString()
    integer_products(model.graph)
    assert model.SerializeToString() == once


def test_the_rebuild_reads_a_product_in_integers_back_to_its_float_weight() -> None:
    """``toolsel tune`` rebuilds torch weights from the served graph: each weight computed in integers is its
    integers times the column scales after the product, the very values the Cast and Mul computed before."""
    from toolsel.tuning.from_onnx import _constants, _readers

    before, after = _model(), _model()
    integer_products(after.graph)
    floats, _ = _constants(before.graph, _readers(before.graph))[:2]
    values, ints, scaled_in = _constants(after.graph, _readers(after.graph))
    assert set(scaled_in) == {"widen_q", "narrow_q"}
    for name in ("widen", "narrow"):
        assert np.array_equal(values[f"{name}_q"], floats[name])
        assert ints[f"{name}_q"][0].dtype == np.int8
    assert scaled_in["narrow_q"] == "narrow_out"  # where its scales end: the Linear layer's bias is added there


def test_a_product_in_integers_not_scaled_back_is_refused_by_the_rebuild() -> None:
    from toolsel.tuning.from_onnx import NotRebuildable, _constants, _readers

    model = _model()
    integer_products(model.graph)
    scaled = next(n for n in model.graph.node if n.op_type == "Mul" and "narrow_scale" in n.input)
    rows = next(n for n in model.graph.node if scaled.input[0] in n.output)
    rows.output[0] = scaled.output[0]  # the column scales left out
    model.graph.node.remove(scaled)
    with pytest.raises(NotRebuildable, match="not scaled back by its columns"):
        _constants(model.graph, _readers(model.graph))
