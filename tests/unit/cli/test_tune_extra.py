"""Without the tune extra, ``toolsel tune`` says in one line what to install and exits 2, before touching
anything."""

import sys

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
