"""The ``toolsel`` app: every command group's commands under one typer app, and the console script's entry."""

import sys

import typer

from cli import admin, analytics, asyncapi, docs, evaluation, learning, selection, services, stack, tools

app = typer.Typer(
    help="toolsel: which few tools an LLM agent should see.", no_args_is_help=True, pretty_exceptions_enable=False
)
for group in (stack, selection, evaluation, services, learning, analytics, asyncapi):
    app.add_typer(group.app)
app.add_typer(tools.app, name="tools")
app.add_typer(admin.app, name="admin", no_args_is_help=True)
app.add_typer(docs.app, name="docs")


def main() -> None:
    app(sys.argv[1:], prog_name="toolsel")
