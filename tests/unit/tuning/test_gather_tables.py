"""Tables stored small and turned back to float32 after the Gather: the same numbers out, no float32 table kept."""

import numpy as np
import pytest

pytest.importorskip("torch", reason="the export needs the tune extra")
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from toolsel.tuning.export import gather_tables_first, quantised

ROWS, WIDTH = 500, 24


def _model(weights: str) -> onnx.ModelProto:
    """Token ids -> their rows of a table stored as ``store_weights`` stores it (int8 with a scale per row, or
    float16), turned back before the Gather, plus a float32 matrix product after it."""
    rng = np.random.default_rng(0)
    table = rng.standard_normal((ROWS, WIDTH)).astype(np.float32)
    matrix = numpy_helper.from_array(rng.standard_normal((WIDTH, 4)).astype(np.float32), "matrix")
    if weights == "int8":
        ints, scale = quantised(table, 1)
        stored = [numpy_helper.from_array(ints, "table_q"), numpy_helper.from_array(scale, "table_scale")]
        back = [
            helper.make_node("Cast", ["table_q"], ["table_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["table_f", "table_scale"], ["table"]),
        ]
    else:
        stored = [numpy_helper.from_array(table.astype(np.float16), "table_h")]
        back = [helper.make_node("Cast", ["table_h"], ["table"], to=TensorProto.FLOAT)]
    nodes = [
        *back,
        helper.make_node("Gather", ["table", "ids"], ["rows"]),
        helper.make_node("MatMul", ["rows", "matrix"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tables",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "tokens", 4])],
        [*stored, matrix],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, ids: np.ndarray) -> np.ndarray:
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(None, {"ids": ids})[0]
    return out


@pytest.mark.parametrize("weights", ["int8", "float16"])
def test_the_rows_are_turned_back_after_the_gather_with_the_same_numbers(weights: str) -> None:
    folded, gathered = _model(weights), _model(weights)
    gather_tables_first(gathered.graph)
    onnx.checker.check_model(gathered)
    ops = [node.op_type for node in gathered.graph.node]
    assert ops[0] == "Gather"
    assert ops[-1] == "MatMul"
    assert "table" not in {out for node in gathered.graph.node for out in node.output}  # no float32 table made
    ids = np.random.default_rng(1).integers(0, ROWS, size=(3, 17))
    assert np.array_equal(_run(folded, ids), _run(gathered, ids))


def test_a_graph_gathered_first_is_left_as_it_is() -> None:
    model = _model("int8")
    gather_tables_first(model.graph)
    once = model.SerializeToString()
    gather_tables_first(model.graph)
    assert model.SerializeToString() == once
