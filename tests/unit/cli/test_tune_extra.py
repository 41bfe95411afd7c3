"""Without the tune extra, ``toolsel tune`` says in one line what to install and exits 2, before touching
anything."""

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import toolsel.tuning
from toolsel.cli.main import app


def test_tune_without_the_extra_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "toolsel.tuning.tune", None)  # as when torch and transformers are missing
    monkeypatch.delattr(toolsel.tuning, "tune", raising=False)  # imported by a test before this one
    done = CliRunner().invoke(app, ["tune"])
    assert done.exit_code == 2, done.output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'toolsel[tune]'" in lines[0]


@pytest.mark.parametrize(
    "option",
    [["--batch-size", "1"], ["--learning-rate", "0"], ["--learning-rate", "-1e-5"], ["--base", "no-such-folder"]],
)
def test_train_model_refuses_bad_options_before_training(tmp_path: Path, option: list[str]) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"query": "q", "tool_id": "t", "tool_text": "t", "group": "g"}\n')
    done = CliRunner().invoke(app, ["train-model", str(pairs), "--out", str(tmp_path / "model"), *option])
    assert done.exit_code == 2, done.output  # a usage error, as typer words it
    assert option[0] in done.output
    assert not (tmp_path / "model").exists()  # nothing written


def test_tune_refuses_a_learning_rate_not_above_zero() -> None:
    done = CliRunner().invoke(app, ["tune", "--dry-run", "--learning-rate", "0"])
    assert done.exit_code == 2, done.output
    assert "--learning-rate" in done.output
