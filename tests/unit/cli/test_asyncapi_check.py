"""``toolsel asyncapi --check`` tells documents that are not there from documents that are stale, and building the
apps prints no library's warning."""

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolsel.cli.asyncapi import documents
from toolsel.cli.main import app
from toolsel.stack import TOOLSEL_COMMAND

ROOT = Path(__file__).resolve().parents[3]


def test_no_documents_is_not_called_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["asyncapi", "--check"])
    assert done.exit_code == 2
    assert "no AsyncAPI documents in docs/asyncapi" in done.stderr
    assert "stale" not in done.stderr


def test_a_missing_document_and_a_stale_one_are_named(tmp_path: Path) -> None:
    texts = documents()
    for name in ("selector", "learner"):
        (tmp_path / f"{name}.json").write_text(texts[name])
    missing = CliRunner().invoke(app, ["asyncapi", "--check", "--out", str(tmp_path)])
    assert (missing.exit_code, "missing AsyncAPI documents" in missing.stderr) == (1, True)
    assert "indexer.json" in missing.stderr
    (tmp_path / "indexer.json").write_text("{}")
    stale = CliRunner().invoke(app, ["asyncapi", "--check", "--out", str(tmp_path)])
    assert (stale.exit_code, "stale AsyncAPI documents" in stale.stderr) == (1, True)


def test_building_the_apps_prints_no_warning() -> None:
    done = subprocess.run(
        [*TOOLSEL_COMMAND, "asyncapi", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
