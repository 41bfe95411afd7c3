"""The ``toolsel`` app: every command group's commands under one typer app, and the console script's entry, which
turns an unexpected exception into one line on stderr (``--debug`` shows the traceback)."""

import sys
from importlib.metadata import version
from typing import Annotated

import typer
from pydantic import ValidationError

from cli import (
    admin,
    analytics,
    asyncapi,
    bench,
    chaos,
    docs,
    evaluation,
    learning,
    mcp,
    plugins,
    selection,
    services,
    stack,
    tools,
)
from cli.running import FAILED, USAGE, complain, first_problem

app = typer.Typer(
    help="toolsel: which few tools an LLM agent should see.", no_args_is_help=True, pretty_exceptions_enable=False
)
for group in (stack, selection, evaluation, bench, services, learning, analytics, asyncapi, mcp, chaos):
    app.add_typer(group.app)
app.add_typer(tools.app, name="tools")
app.add_typer(plugins.app, name="plugins")
app.add_typer(admin.app, name="admin", no_args_is_help=True)
app.add_typer(docs.app, name="docs")

debugging = False
"""Set by ``--debug``: an unexpected exception is raised with its traceback."""


def _version(shown: bool) -> None:
    if shown:
        print(f"toolsel {version('toolsel')}")
        raise typer.Exit()


@app.callback()
def options(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an unexpected error")] = False,
    show_version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Options of every command."""
    global debugging
    debugging = debug


def main() -> None:
    try:
        app(sys.argv[1:], prog_name="toolsel")
    except KeyboardInterrupt:
        sys.exit(130)
    except ValidationError as error:
        if debugging:
            raise
        complain(first_problem(error))
        sys.exit(USAGE)
    except Exception as error:
        if debugging:
            raise
        complain(f"{type(error).__name__}: {error} (toolsel --debug ... shows the traceback)")
        sys.exit(FAILED)
