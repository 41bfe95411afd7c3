"""``toolsel docs config``: prints the settings table, rewrites it in a README, and fails a stale one."""

from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from toolsel.settings import Settings
from toolsel.settings_table import END, START, settings_table


def test_check_fails_a_stale_readme_and_write_makes_it_current(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{START}\n| stale |\n{END}\n")
    runner = CliRunner()

    stale = runner.invoke(app, ["docs", "config", "--check", "--readme", str(readme)])
    assert stale.exit_code == 1
    assert "stale" in stale.output

    assert runner.invoke(app, ["docs", "config", "--write", "--readme", str(readme)]).exit_code == 0
    assert readme.read_text() == f"# x\n\n{START}\n{settings_table(Settings)}{END}\n"
    assert runner.invoke(app, ["docs", "config", "--check", "--readme", str(readme)]).exit_code == 0


def test_without_options_the_table_is_printed() -> None:
    done = CliRunner().invoke(app, ["docs", "config"])
    assert done.exit_code == 0
    assert done.output == settings_table(Settings)
