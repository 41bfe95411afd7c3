"""``toolsel docs``: documentation generated from the code, kept in the operators' page (docs/operators.md)."""

from pathlib import Path
from typing import Annotated

import typer

from toolsel.cli.running import fail
from toolsel.settings import Settings
from toolsel.settings_table import settings_table, with_settings_table

app = typer.Typer(help="Documentation generated from the code.", no_args_is_help=True)

OPERATORS_PAGE = Path("docs/operators.md")
"""The page whose configuration section holds the table, between the settings-table markers."""


@app.command("config")
def config(
    write: Annotated[bool, typer.Option(help="rewrite the table between the page's settings-table markers")] = False,
    check: Annotated[bool, typer.Option(help="fail if the page's table differs from the settings")] = False,
    doc: Annotated[Path, typer.Option(help="the page to rewrite or check")] = OPERATORS_PAGE,
) -> None:
    """The configuration table (every TOOLSEL_* variable, its default and meaning) generated from Settings."""
    table = settings_table(Settings)
    if not write and not check:
        print(table, end="")
        return
    text = doc.read_text()
    current = with_settings_table(text, table)
    if check and current != text:
        fail(f"{doc}'s configuration table is stale: run `toolsel docs config --write`")
    if write:
        doc.write_text(current)
