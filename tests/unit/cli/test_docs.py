"""``toolsel docs config``: prints the settings table, rewrites it in a page, and fails a stale one."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolsel.cli.main import app
from toolsel.settings import Settings
from toolsel.settings_table import END, START, settings_table


def test_check_fails_a_stale_page_and_write_makes_it_current(tmp_path: Path) -> None:
    page = tmp_path / "operators.md"
    page.write_text(f"# x\n\n{START}\n| stale |\n{END}\n")
    runner = CliRunner()

    stale = runner.invoke(app, ["docs", "config", "--check", "--doc", str(page)])
    assert stale.exit_code == 1
    assert "stale" in stale.output

    assert runner.invoke(app, ["docs", "config", "--write", "--doc", str(page)]).exit_code == 0
    assert page.read_text() == f"# x\n\n{START}\n{settings_table(Settings)}{END}\n"
    assert runner.invoke(app, ["docs", "config", "--check", "--doc", str(page)]).exit_code == 0


def test_by_default_the_operators_page_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "docs" / "operators.md"
    page.parent.mkdir()
    page.write_text(f"{START}\n{settings_table(Settings)}{END}\n")
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(app, ["docs", "config", "--check"]).exit_code == 0
    page.write_text(f"{START}\n| stale |\n{END}\n")
    assert CliRunner().invoke(app, ["docs", "config", "--check"]).exit_code == 1


def test_without_options_the_table_is_printed() -> None:
    done = CliRunner().invoke(app, ["docs", "config"])
    assert done.exit_code == 0
    assert done.output == settings_table(Settings)
