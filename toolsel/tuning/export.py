"""The trained model as the product runs it: ONNX (token vectors out; the embedder mean-pools them), its weights
stored as int8 as the packaged model's are, beside its tokenizer files, and checked against the torch model.

Why not onnxruntime's dynamic quantisation: it quantises each matrix product's input with one range for the whole
tensor, that is for every text of a padded batch and its padding together. A text's vector then depends on the
batch it is padded in (cosine 0.976 to itself alone, 0.915 to the torch model, where the float32 export agrees to
1.0000). The packaged model stores int8 weights with a scale per output column and computes its feed-forward
products in int8 with a range per token (``integer_products``), the rest in float32; so does this export (cosine
to torch about 0.998, none to the batch)."""

import shutil
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.numpy_helper
import torch
from transformers import AutoModel, AutoTokenizer

from toolsel.embedder import TOKENIZER_FILES
from toolsel.tuning.train import mean_pooled

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
SERVED_MAX_TOKENS = 256
"""The length cut the served model reads (all-MiniLM-L6-v2 was trained with it)."""
MIN_COSINE = 0.99
"""Least cosine between the ONNX model's and the torch model's vector of a text, for the export to pass."""


class TokenVectors(torch.nn.Module):
    """The model with positional inputs and its last hidden state as the one output, as fastembed reads it."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> Any:
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state


def export(trained: Path, target: Path, weights: str = "int8") -> Path:
    """``target/model.onnx`` (its large weights stored as ``weights``, int8 or float16; an int8 model's feed-forward
    products computed in integers) and the tokenizer files, from the model saved in ``trained``, where the float32
    export stays (``model-fp32.onnx``)."""
    target.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(trained, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(trained)
    example = tokenizer(["a padded example", "and a longer one, so that the first is padded"], padding=True)
    tensors = tuple(torch.tensor(example[name]) for name in INPUTS)
    fp32 = trained / "model-fp32.onnx"
    torch.onnx.export(
        TokenVectors(model),
        tensors,
        str(fp32),
        input_names=list(INPUTS),
        output_names=["last_hidden_state"],
        dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")},
        opset_version=17,
        dynamo=False,
    )
    store_weights(fp32, target / "model.onnx", weights)
    if weights == "int8":
        with_integer_products(target / "model.onnx")
    shutil.copyfile(trained / "config.json", target / "config.json")
    packaged = resources.files("toolsel.model")
    for name in TOKENIZER_FILES:  # fine-tuning leaves the tokenizer as it was: the packaged files, 256 tokens
        (target / name).write_bytes(packaged.joinpath(name).read_bytes())
    return target / "model.onnx"


QUANTISED_MIN_SIZE = 65_536
"""Weights of at least this many numbers are stored smaller (the matrices and embedding tables; biases and norms
stay float32)."""
WEIGHTS = ("int8", "float16")
"""How the large weights may be stored: int8 (a quarter of float32's size) where it reproduces the model, else
float16 (half). A model tuned from the packaged int8 model moves its weights by less than int8's step, so int8
would round most of what it learnt away (``build``)."""


def stored_as(base: Path) -> str:
    """How a model trained from the weights in ``base`` is to be stored: float16 where they sit on an int8 grid
    (rebuilt from an int8 export, as a tune's are when it starts from the packaged model), int8 otherwise.
    Training moves a weight by less than int8's step, so from a grid point int8 would round most of the move back:
    a tune of 119 steps from the packaged model kept a cosine of only 0.965 to what it had learnt."""
    from safetensors.numpy import load_file

    state = load_file(str(base / "model.safetensors"))
    matrices = [v for k, v in state.items() if k.startswith("encoder.") and v.ndim == 2]
    on_grid = bool(matrices) and all(
        np.allclose(ints * scale, v, rtol=1e-6, atol=0) for v in matrices for ints, scale in [quantised(v, 1)]
    )
    return "float16" if on_grid else "int8"


def store_weights(source: Path, target: Path, weights: str = "int8") -> None:
    """A copy of the ONNX model whose large matrices (a MatMul's weights, a Gather's table) are int8 with a float32
    scale per output column (per row of a table), or float16, turned back into float32 in the graph, which
    onnxruntime folds once at load: a smaller file, the same arithmetic as float32 at run time."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, not {weights!r}")
    model = onnx.load(str(source))
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    axes = {}  # weight name -> axis its scale runs along: a MatMul's columns (reduce rows), a table's rows
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            axes[node.input[1]] = 0
        elif node.op_type == "Gather" and node.input[0] in initializers:
            axes[node.input[0]] = 1
    dequantised = []
    for name, axis in axes.items():
        values = onnx.numpy_helper.to_array(initializers[name])
        if values.dtype != np.float32 or values.ndim != 2 or values.size < QUANTISED_MIN_SIZE:
            continue
        graph.initializer.remove(initializers[name])
        if weights == "float16":
            graph.initializer.append(onnx.numpy_helper.from_array(values.astype(np.float16), f"{name}_h"))
            dequantised.append(onnx.helper.make_node("Cast", [f"{name}_h"], [name], to=onnx.TensorProto.FLOAT))
            continue
        ints, scale = quantised(values, axis)
        graph.initializer.extend(
            [
                onnx.numpy_helper.from_array(ints, f"{name}_q"),
                onnx.numpy_helper.from_array(scale, f"{name}_scale"),
            ]
        )
        dequantised += [
            onnx.helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=onnx.TensorProto.FLOAT),
            onnx.helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [name]),
        ]
    nodes = [*dequantised, *graph.node]
    del graph.node[:]
    graph.node.extend(nodes)
    gather_tables_first(graph)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))


def with_integer_products(path: Path) -> None:
    """The int8 model at ``path`` rewritten to compute its feed-forward products in integers (``integer_products``):
    what the export does to every int8 model, and how the packaged model's graph was made from its weights-only
    one (the same weights)."""
    model = onnx.load(str(path))
    integer_products(model.graph)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


INTEGER_CONSTANTS = "integer_products"
"""The prefix of the constants ``integer_products`` adds to a graph."""


def integer_products(graph: Any) -> None:
    """The feed-forward layers' matrix products by int8 weights (a Cast of the integers times their column scales, as
    ``store_weights`` writes them) computed in integers: the product's input cut to 8 bits per row, each token by
    its own largest value (so a text's vector never depends on what it is padded with, as onnxruntime's dynamic
    quantisation's one range per batch did), times the weight's integers (MatMulInteger, onnxruntime's u8 x s8
    kernels), scaled back by the row's scale and the column's. The feed-forward weights are the ones that widen or
    narrow the token vectors (384 x 1536 and back), two thirds of the model's multiply-adds; the attention's square
    projections stay in float32, where integers cost most of the precision (docs/results.md: a query's vector kept
    a cosine of 0.9995 to the float32 products' this way, 0.9984 with every product in integers). The weight's
    integers are read as they are stored; its Cast and Mul are dropped where nothing else reads them. A graph
    computed in integers already is left as it is."""
    listed = list(graph.node)
    made = {out: node for node in listed for out in node.output}
    stored = {init.name: init for init in graph.initializer}
    readers = Counter(name for node in listed for name in node.input)
    eps, most, middle, zero = (f"{INTEGER_CONSTANTS}_{n}" for n in ("eps", "127", "128", "zero_point"))
    nodes, dropped, rewritten = [], set(), 0
    for node in listed:
        weight = _feed_forward_int8(made.get(node.input[1]), made, stored) if node.op_type == "MatMul" else None
        if weight is None:
            nodes.append(node)
            continue
        ints, scale = weight
        x, name = node.input[0], node.input[1]
        nodes += [
            onnx.helper.make_node("Abs", [x], [f"{name}_abs"]),
            onnx.helper.make_node("ReduceMax", [f"{name}_abs"], [f"{name}_max"], axes=[-1], keepdims=1),
            onnx.helper.make_node("Max", [f"{name}_max", eps], [f"{name}_range"]),
            onnx.helper.make_node("Div", [f"{name}_range", most], [f"{name}_step"]),
            onnx.helper.make_node("Div", [x, f"{name}_step"], [f"{name}_steps"]),
            onnx.helper.make_node("Round", [f"{name}_steps"], [f"{name}_rounded"]),
            onnx.helper.make_node("Add", [f"{name}_rounded", middle], [f"{name}_shifted"]),
            onnx.helper.make_node("Cast", [f"{name}_shifted"], [f"{name}_u8"], to=onnx.TensorProto.UINT8),
            onnx.helper.make_node("MatMulInteger", [f"{name}_u8", ints, zero], [f"{name}_i32"]),
            onnx.helper.make_node("Cast", [f"{name}_i32"], [f"{name}_sum"], to=onnx.TensorProto.FLOAT),
            onnx.helper.make_node("Mul", [f"{name}_sum", f"{name}_step"], [f"{name}_rows"]),
            onnx.helper.make_node("Mul", [f"{name}_rows", scale], node.output),
        ]
        rewritten += 1
        dropped |= _unmade(name, made, readers)
    if not rewritten:
        return
    graph.initializer.extend(
        [
            onnx.numpy_helper.from_array(np.array(1e-8, dtype=np.float32), eps),
            onnx.numpy_helper.from_array(np.array(127.0, dtype=np.float32), most),
            onnx.numpy_helper.from_array(np.array(128.0, dtype=np.float32), middle),
            onnx.numpy_helper.from_array(np.array(128, dtype=np.uint8), zero),
        ]
    )
    del graph.node[:]
    graph.node.extend(node for node in nodes if id(node) not in dropped)


def _feed_forward_int8(maker: Any, made: dict[str, Any], stored: dict[str, Any]) -> tuple[str, str] | None:
    """(the stored integers, their column scales) where ``maker`` turns a feed-forward layer's int8 weight (not
    square) back to float32 as ``store_weights`` writes it (a Cast of int8 times a scale per column), else None."""
    turned = _stored_back(maker, made, stored)
    if turned is None or turned[1] is None:
        return None
    ints, scales = stored[turned[0]], stored[turned[1]]
    feed_forward = len(ints.dims) == 2 and ints.dims[0] != ints.dims[1]
    int8 = ints.data_type == onnx.TensorProto.INT8 and feed_forward
    return (turned[0], turned[1]) if int8 and tuple(scales.dims) == (1, ints.dims[1]) else None


def _unmade(name: str, made: dict[str, Any], readers: Counter[str]) -> set[int]:
    """The nodes (by identity) that turn the stored ``name`` back to float32 (its Mul, its Cast), where nothing else
    reads what they make: a rewrite that reads the stored values directly drops them."""
    if readers[name] != 1:
        return set()
    maker = made[name]
    dropped = {id(maker)}
    if maker.op_type == "Mul" and readers[maker.input[0]] == 1:
        dropped.add(id(made[maker.input[0]]))  # its Cast
    return dropped


def gather_tables_first(graph: Any) -> None:
    """Each table a Gather reads (the token and position embeddings) turned back to float32 after the Gather, on the
    rows it picks, not before: onnxruntime folds a constant table to float32 once at load and keeps it (the token
    table: 47 MB, where its int8 rows and scales are 12 MB; a third of the served model's memory), while the rows of
    a request are a few thousand numbers. Each number is the same cast and the same product, so the vectors are bit
    for bit those of the folded table. The gathered rows are named ``<table>_rows`` (``from_onnx`` reads the table
    back by that name); tables gathered first already are left as they are."""
    listed = list(graph.node)  # these very objects throughout: they are told apart by identity
    made = {out: node for node in listed for out in node.output}
    stored = {init.name: init for init in graph.initializer}
    readers = Counter(name for node in listed for name in node.input)
    nodes, dropped = [], set()
    for node in listed:
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        turned = _turned_back(made.get(node.input[0]), made, stored) if node.op_type == "Gather" and axis == 0 else None
        if turned is None:
            nodes.append(node)
            continue
        table, scale = turned
        rows, picked = f"{node.input[0]}_rows", node.input[1]
        nodes.append(onnx.helper.make_node("Gather", [table, picked], [rows], axis=0))
        if scale is None:
            nodes.append(onnx.helper.make_node("Cast", [rows], node.output, to=onnx.TensorProto.FLOAT))
        else:
            nodes += [
                onnx.helper.make_node("Gather", [scale, picked], [f"{rows}_scale"], axis=0),
                onnx.helper.make_node("Cast", [rows], [f"{rows}_f"], to=onnx.TensorProto.FLOAT),
                onnx.helper.make_node("Mul", [f"{rows}_f", f"{rows}_scale"], node.output),
            ]
        dropped |= _unmade(node.input[0], made, readers)
    del graph.node[:]
    graph.node.extend(node for node in nodes if id(node) not in dropped)


def _turned_back(maker: Any, made: dict[str, Any], stored: dict[str, Any]) -> tuple[str, str | None] | None:
    """(the stored table, its scale or None) where ``maker`` turns a stored table back to float32 as
    ``store_weights`` writes it (a Cast of float16; a Cast of int8 times a scale per row), else None."""
    turned = _stored_back(maker, made, stored)
    if turned is None or turned[1] is None:
        return turned
    table, scale = tuple(stored[turned[0]].dims), tuple(stored[turned[1]].dims)
    return turned if len(table) == 2 and scale == (table[0], 1) else None


def _stored_back(maker: Any, made: dict[str, Any], stored: dict[str, Any]) -> tuple[str, str | None] | None:
    """(the stored values, their scale or None) where ``maker`` turns a stored initializer back to float32 as
    ``store_weights`` writes it: a Cast (of float16), or a Cast (of int8) times a scale; else None."""
    if maker is None:
        return None
    if maker.op_type == "Cast" and maker.input[0] in stored:
        return maker.input[0], None
    if maker.op_type != "Mul" or len(maker.input) != 2:
        return None
    cast, scale = made.get(maker.input[0]), maker.input[1]
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in stored or scale not in stored:
        return None
    return cast.input[0], scale


def quantised(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` as int8 and the float32 scale (along ``axis``) that turns them back."""
    scale = (np.maximum(np.abs(values).max(axis=axis, keepdims=True), 1e-12) / 127).astype(np.float32)
    return np.round(values / scale).astype(np.int8), scale


@dataclass(frozen=True)
class Parity:
    min_cosine: float
    """Least cosine between a text's ONNX vector (padded in a batch of mixed lengths) and its torch vector."""
    min_batch_cosine: float
    """Least cosine between a text's ONNX vector embedded alone and padded in the batch."""

    @property
    def passed(self) -> bool:
        return self.min_cosine >= MIN_COSINE and self.min_batch_cosine >= MIN_COSINE


def onnx_session(onnx: Path) -> Any:
    """An inference session of the ONNX file on the CPU (opening one takes a while: open it once)."""
    import onnxruntime

    return onnxruntime.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])


def onnx_vectors(session: Any, tokenizer: Any, texts: list[str]) -> np.ndarray:
    """Unit vectors of ``texts`` padded in one batch, from an ``onnx_session``, mean-pooled as the embedder does."""
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=SERVED_MAX_TOKENS, return_tensors="np")
    feed = {name: encoded[name].astype(np.int64) for name in INPUTS}
    states = session.run(None, feed)[0]
    mask = encoded["attention_mask"][..., None].astype(np.float32)
    pooled = (states * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    result: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return result


def check(trained: Path, onnx: Path, texts: list[str]) -> Parity:
    """How closely the ONNX model reproduces the torch model on ``texts`` (of mixed lengths) padded together, and
    how little a text's vector depends on the batch it is padded in."""
    model = AutoModel.from_pretrained(trained, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(trained)
    with torch.no_grad():
        alone_torch = np.vstack([mean_pooled(model, tokenizer, [t], SERVED_MAX_TOKENS).numpy() for t in texts])
    session = onnx_session(onnx)
    batched = onnx_vectors(session, tokenizer, texts)
    alone = np.vstack([onnx_vectors(session, tokenizer, [t]) for t in texts])
    return Parity(
        min_cosine=float((batched * alone_torch).sum(axis=1).min()),
        min_batch_cosine=float((batched * alone).sum(axis=1).min()),
    )
