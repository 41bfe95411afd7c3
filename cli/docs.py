"""``toolsel docs``: documentation generated from the code, kept in the README."""

from pathlib import Path
from typing import Annotated

import typer

from cli.running import fail
from toolsel.settings import Settings
from toolsel.settings_table import settings_table, with_settings_table

app = typer.Typer(help="Documentation generated from the code.", no_args_is_help=True)


@app.command("config")
def config(
    write: Annotated[bool, typer.Option(help="rewrite the table between the README's settings-table markers")] = False,
    check: Annotated[bool, typer.Option(help="fail if the README's table differs from the settings")] = False,
    readme: Annotated[Path, typer.Option(help="the README to rewrite or check")] = Path("README.md"),
) -> None:
    """The configuration table (every TOOLSEL_* variable, its default and meaning) generated from Settings."""
    table = settings_table(Settings)
    if not write and not check:
        print(table, end="")
        return
    text = readme.read_text()
    current = with_settings_table(text, table)
    if check and current != text:
        fail(f"{readme}'s configuration table is stale: run `toolsel docs config --write`")
    if write:
        readme.write_text(current)
