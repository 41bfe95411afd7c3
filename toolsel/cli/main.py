"""The ``toolsel`` app: every command group's commands under one typer app, and the console script's entry, which
turns a command line it cannot parse, and an unexpected exception, into one line on stderr (``--debug`` shows
the traceback)."""

import sys
from importlib.metadata import version
from typing import Annotated

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError

from toolsel.cli import (
    admin,
    analytics,
    asyncapi,
    bench,
    chaos,
    docs,
    evaluation,
    identities,
    learning,
    mcp,
    pins,
    plugins,
    selection,
    services,
    stack,
    tools,
    tuning,
)
from toolsel.cli.running import FAILED, INTERRUPTED, USAGE, complain, first_problem
from toolsel.settings import SettingsRefused, refusal

app = typer.Typer(
    help="toolsel: which few tools an LLM agent should see.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # a docstring's paragraph reads as one: no break where its source line ends
)
for group in (stack, selection, evaluation, bench, services, learning, analytics, asyncapi, mcp, chaos, tuning):
    app.add_typer(group.app)
app.add_typer(tools.app, name="tools")
app.add_typer(plugins.app, name="plugins")
app.add_typer(pins.app, name="pins")
app.add_typer(identities.app, name="identity")
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


def _refusal(error: Exception) -> tuple[int, str] | None:
    """Click's refusal of a command line (an unknown command or option, a missing or bad value) as its exit code
    and its message, else None. Told by its shape, not its class: typer may bundle a Click of its own."""
    code, message = getattr(error, "exit_code", None), getattr(error, "format_message", None)
    return (code, str(message())) if isinstance(code, int) and callable(message) else None


def main() -> None:
    try:
        code = app(sys.argv[1:], prog_name="toolsel", standalone_mode=False)
    except typer.Abort:
        sys.exit(INTERRUPTED)
    except Exception as error:
        if refused := _refusal(error):
            code, message = refused
            if type(error).__name__ == "NoArgsIsHelpError":  # a group without a command: its help, not an error
                print(message, end="")  # (typer's rich help is printed already, and its message is empty)
            else:
                context = getattr(error, "ctx", None)
                complain(message + (f" (see `{context.command_path} --help`)" if context is not None else ""))
            sys.exit(code)
        if debugging:
            raise
        if isinstance(error, ValidationError):
            complain(first_problem(error))
            sys.exit(USAGE)
        if isinstance(error, SettingsRefused | SettingsError):  # settings read where no command expected it
            complain(refusal(error) if isinstance(error, SettingsError) else str(error))
            sys.exit(USAGE)
        complain(f"{type(error).__name__}: {error} (toolsel --debug ... shows the traceback)")
        sys.exit(FAILED)
    sys.exit(code if isinstance(code, int) else 0)
