"""Torch weights rebuilt from a model ``export`` wrote, so that ``toolsel tune`` can train from a model that ships
only as int8 ONNX (the packaged default: 23 MB, where its float32 weights would be 90 MB).

Every weight of the graph goes back to its torch parameter: those the exporter kept by name directly, a matrix
product's anonymous weight (transposed) to the Linear layer whose bias the product's sum adds, so no numbering of
names is relied on. An int8 weight is its integers times their scale, unless the base model's float32 weight
quantises to exactly those integers (a weight frozen in training, as the token table is): then it is the base's.
Whatever the graph lacks (the pooler, which the served model does not use) comes from the base weights. The
rebuilt model must then reproduce the ONNX model's vectors, or it is refused."""

import json
import os
import shutil
import tempfile
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.numpy_helper
import torch
from transformers import AutoConfig, AutoModel, BertModel

from toolsel.embedder import TOKENIZER_FILES
from toolsel.tuning.build import PARITY_TEXTS
from toolsel.tuning.card import file_sha256
from toolsel.tuning.export import Parity, check, quantised

EXPORTED_PREFIX = "model."
"""What ``export`` puts before a parameter's name (its wrapper holds the model as ``model``)."""
RECORD = "rebuilt.json"


class NotRebuildable(RuntimeError):
    """The ONNX model's weights do not fit the torch model (not a model ``export`` wrote)."""


class RebuildMismatch(NotRebuildable):
    """The rebuilt torch model does not reproduce the ONNX model's vectors."""


def torch_weights_from_onnx(onnx_path: Path, out_dir: Path, base: Path, texts: list[str] | None = None) -> Path:
    """``out_dir`` holding the torch model (safetensors, config, tokenizer files) of ``onnx_path``, its missing
    weights from ``base``, checked against the ONNX model on ``texts`` (the demo catalog's by default). Written
    under another name and renamed into place once checked: a half-written or refused model is never left."""
    state, config, from_base = rebuilt_state(onnx_path, base)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        save_checkpoint(state, config, staging, _tokenizer_dir(onnx_path))
        parity = verify(staging, onnx_path, texts or parity_texts())
        record = {
            "onnx": str(onnx_path.resolve()),
            "onnx_sha256": file_sha256(onnx_path),
            "base": str(base),
            "from_base": from_base,
            "min_cosine": round(parity.min_cosine, 5),
            "min_batch_cosine": round(parity.min_batch_cosine, 5),
        }
        (staging / RECORD).write_text(json.dumps(record, indent=1) + "\n")
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def rebuilt_state(onnx_path: Path, base: Path) -> tuple[dict[str, np.ndarray], Any, list[str]]:
    """The torch model's state from the ONNX model's weights, its config (the model directory's, else the
    base's), and the names of the weights taken from ``base``."""
    graph = onnx.load(str(onnx_path)).graph
    readers = _readers(graph)
    values, ints, scaled_in = _constants(graph, readers)
    config_dir = onnx_path.parent if (onnx_path.parent / "config.json").is_file() else base
    config = AutoConfig.from_pretrained(config_dir)
    base_state = {k: v.numpy() for k, v in AutoModel.from_pretrained(base).state_dict().items()}
    shapes = {k: tuple(v.shape) for k, v in BertModel(config, add_pooling_layer=True).state_dict().items()}
    state: dict[str, np.ndarray] = {}

    def place(key: str, value: np.ndarray, source: str) -> None:
        if key not in shapes or key in state or value.shape != shapes[key]:
            raise NotRebuildable(f"{source} {value.shape} has no place in the torch model (as {key})")
        state[key] = value

    for name, value in values.items():
        key = name.removeprefix(EXPORTED_PREFIX)
        if key in shapes:
            place(key, _original(value, ints.get(name), base_state.get(key)), name)
    for weight, bias in _products(graph, values, state, scaled_in, readers):
        if not bias.endswith(".bias"):
            raise NotRebuildable(f"the matrix product of {weight} adds no Linear layer's bias ({bias})")
        key = bias.removesuffix(".bias") + ".weight"
        place(key, _original(values[weight].T, _transposed(ints.get(weight)), base_state.get(key)), weight)
    from_base = sorted(k for k in shapes if k not in state)
    for key in from_base:
        if key not in base_state:
            raise NotRebuildable(f"{key} is neither in the ONNX model nor in the base weights")
        place(key, base_state[key], f"the base's {key}")
    return state, config, from_base


def _readers(graph: Any) -> dict[str, list[Any]]:
    """Each name's reading nodes."""
    readers: dict[str, list[Any]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            readers[name].append(node)
    return readers


def _constants(
    graph: Any, readers: dict[str, list[Any]]
) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]], dict[str, str]]:
    """The graph's weights as float32 by the names its nodes read them under (an int8 weight as its Cast and Mul
    nodes compute it, a float16 one as its Cast does, a table gathered first under the name of its rows less
    ``_rows``, a product's weight in integers under the name of its integers), each int8 weight's integers and
    scale, and for each product in integers the output its scales end in (``export.integer_products``)."""
    values = {i.name: onnx.numpy_helper.to_array(i) for i in graph.initializer}
    cast_from: dict[str, str] = {}
    ints: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for node in graph.node:
        if node.op_type == "Cast" and node.input[0] in values and values[node.input[0]].dtype == np.float16:
            values[node.output[0]] = values[node.input[0]].astype(np.float32)  # a tuned model's float16 weight
        elif node.op_type == "Cast" and node.input[0] in values and values[node.input[0]].dtype == np.int8:
            values[node.output[0]] = values[node.input[0]].astype(np.float32)
            cast_from[node.output[0]] = node.input[0]
        elif node.op_type == "Mul" and len(node.input) == 2 and all(i in values for i in node.input):
            floats, scale = node.input if node.input[0] in cast_from else reversed(node.input)
            values[node.output[0]] = values[floats] * values[scale]
            if floats in cast_from:
                ints[node.output[0]] = (values[cast_from[floats]], values[scale])
    gathered = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Gather" and n.input[0] in values}
    for rows, table in gathered.items():  # a table gathered before it is turned back (``gather_tables_first``)
        name, stored = rows.removesuffix("_rows"), values[table]
        if name == rows or stored.dtype not in (np.int8, np.float16):
            continue
        scale = gathered.get(f"{rows}_scale")
        if scale is None:
            values[name] = stored.astype(np.float32)
        else:
            values[name] = stored.astype(np.float32) * values[scale]
            ints[name] = (stored, values[scale])
    scaled_in = {}
    for node in graph.node:  # a product in integers: its weight is its integers times the column scales after it
        weight = node.input[1] if node.op_type == "MatMulInteger" else ""
        if values.get(weight, np.zeros(0)).dtype != np.int8:
            continue
        out, scale = node.output[0], None
        while len(readers[out]) == 1 and readers[out][0].op_type in ("Cast", "Mul"):  # float, the row's, the column's
            step = readers[out][0]
            scale = next((i for i in step.input if i in values and values[i].ndim == 2), scale)
            out = step.output[0]
        if scale is None:
            raise NotRebuildable(f"the product in integers of {weight} is not scaled back by its columns")
        stored = values[weight]
        values[weight], ints[weight] = stored.astype(np.float32) * values[scale], (stored, values[scale])
        scaled_in[weight] = out
    return {k: v for k, v in values.items() if v.dtype == np.float32}, ints, scaled_in


def _products(
    graph: Any,
    values: dict[str, np.ndarray],
    named: dict[str, np.ndarray],
    scaled_in: dict[str, str],
    readers: dict[str, list[Any]],
) -> list[tuple[str, str]]:
    """Each matrix product by a constant weight that has no parameter's name, with the name of the bias the sum
    after it adds (the Linear layer's); a product in integers is read from its weight to where its scales end."""
    kept = {EXPORTED_PREFIX + k for k in named} | set(named)
    found = []
    for node in graph.node:
        if node.op_type == "MatMulInteger" and node.input[1] in scaled_in:
            output = scaled_in[node.input[1]]
        elif node.op_type == "MatMul" and node.input[1] in values and node.input[1] not in kept:
            output = node.output[0]
        else:
            continue
        sums = [n for n in readers[output] if n.op_type == "Add"]
        biases = [i for n in sums for i in n.input if i in values]
        if len(biases) != 1:
            raise NotRebuildable(f"the matrix product of {node.input[1]} is not followed by one bias")
        found.append((node.input[1], biases[0].removeprefix(EXPORTED_PREFIX)))
    return found


def _transposed(ints: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray] | None:
    return None if ints is None else (ints[0].T, ints[1].T)


def _original(value: np.ndarray, ints: tuple[np.ndarray, np.ndarray] | None, base: np.ndarray | None) -> np.ndarray:
    """The float32 weight an int8 one was made from where the base's is (it quantises to the same integers with
    the same scale, per row or per column), else ``value`` itself."""
    if ints is None or base is None or base.shape != value.shape:
        return value
    axis = 1 if ints[1].shape[0] == value.shape[0] else 0
    again, scale = quantised(base, axis)
    return base if np.array_equal(again, ints[0]) and np.array_equal(scale, ints[1]) else value


def save_checkpoint(state: dict[str, np.ndarray], config: Any, out: Path, tokenizer_dir: Path) -> None:
    """The torch model of ``state`` in transformers' layout, with the tokenizer files of ``tokenizer_dir``."""
    model = BertModel(config, add_pooling_layer=True)
    model.load_state_dict({k: torch.tensor(v) for k, v in state.items()}, strict=True)
    model.save_pretrained(out)
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer_dir / name, out / name)


def verify(checkpoint: Path, onnx_path: Path, texts: list[str]) -> Parity:
    """How closely the torch model in ``checkpoint`` reproduces the ONNX model; refused below ``MIN_COSINE``."""
    parity = check(checkpoint, onnx_path, texts)
    if not parity.passed:
        raise RebuildMismatch(f"the torch model rebuilt from {onnx_path} differs from it: {parity}")
    return parity


def parity_texts() -> list[str]:
    """Descriptions and example queries of the packaged demo catalog, from the shortest to the longest, evenly
    spaced in length order."""
    catalog = json.loads(resources.files("toolsel.demo").joinpath("catalog.json").read_text())
    tools = [t for plugin in catalog["plugins"] for t in plugin["tools"]]
    texts = sorted({text for t in tools for text in (t["description"], *t.get("example_queries", []))}, key=len)
    last = len(texts) - 1
    return [texts[round(i * last / (PARITY_TEXTS - 1))] for i in range(PARITY_TEXTS)]


def _tokenizer_dir(onnx_path: Path) -> Path:
    """The model directory where it holds the tokenizer files, else the package's (which every model reads)."""
    if all((onnx_path.parent / name).is_file() for name in TOKENIZER_FILES):
        return onnx_path.parent
    return Path(str(resources.files("toolsel.model")))
