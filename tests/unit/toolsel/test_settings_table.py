"""The configuration table is generated from Settings: the rows, their rendering, and the operators' page."""

from pathlib import Path

import pytest
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from toolsel.settings import Settings
from toolsel.settings_table import END, START, settings_rows, settings_table, show_default, with_settings_table

OPERATORS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "operators.md"


class Example(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EX_", use_attribute_docstrings=True)

    data_dir: Path = Field(default_factory=lambda: Path.home() / "data")
    """Where the data goes,
    across two lines | with a pipe."""
    url: str | None = None
    weights: dict[str, float] = Field(default_factory=lambda: {"a": 1.0, "b": 0.5})
    fast: bool = False
    """Fast."""


def test_rows_name_the_environment_variable_and_render_default_and_docstring() -> None:
    assert settings_rows(Example) == [
        ("`EX_DATA_DIR`", "`~/data`", "Where the data goes, across two lines \\| with a pipe."),
        ("`EX_URL`", "unset", ""),
        ("`EX_WEIGHTS`", '`{"a": 1.0, "b": 0.5}`', ""),
        ("`EX_FAST`", "`false`", "Fast."),
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "unset"), (True, "`true`"), (20, "`20`"), (3600.0, "`3600`"), (0.02, "`0.02`"), (["x"], '`["x"]`')],
)
def test_defaults_are_shown_as_the_environment_spells_them(value: object, shown: str) -> None:
    assert show_default(value) == shown


def test_the_table_replaces_only_what_is_between_the_markers() -> None:
    text = f"# title\n\n{START}\nold table\n{END}\n\nafter\n"
    assert with_settings_table(text, "| new |\n") == f"# title\n\n{START}\n| new |\n{END}\n\nafter\n"


def test_a_text_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="settings-table"):
        with_settings_table("# no table here\n", "| new |\n")


def test_every_setting_says_what_it_is_for() -> None:
    assert [row.variable for row in settings_rows(Settings) if not row.meaning] == []


def test_the_operators_page_table_is_the_one_settings_generate() -> None:
    text = OPERATORS_PAGE.read_text()
    assert with_settings_table(text, settings_table(Settings)) == text, "run `toolsel docs config --write`"
