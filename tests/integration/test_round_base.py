"""``scripts/round_base_weights.py`` writes the float16-rounded base the packaged model's card names, byte for byte:
anyone can train the packaged model again from the same weights."""

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="rounding the weights needs the tune extra")

ROOT = Path(__file__).resolve().parents[2]


def test_the_rounded_base_is_the_one_the_packaged_card_names(tmp_path: Path) -> None:
    out = tmp_path / "base"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "round_base_weights.py"), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    card = json.loads(resources.files("toolsel.model").joinpath("minilm-tools/model_card.json").read_text())
    named = card["base_weights"].rsplit("sha256 ", 1)[1]
    assert done.stdout.split("sha256 ")[1].strip() == named
    assert (out / "tokenizer.json").exists()
