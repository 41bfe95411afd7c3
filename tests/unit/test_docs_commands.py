"""Every ``toolsel`` command that README.md and docs/*.md show in a shell block names a command that exists, with
options and arguments that parse. Each is parsed by the CLI's own Click objects, as ``toolsel`` would parse it,
without running anything: a renamed command or option fails here rather than in a reader's terminal."""

import re
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest
import typer
from typer.core import TyperGroup

from toolsel.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELL_BLOCKS = {"", "bash", "sh", "shell", "console"}
"""Fenced blocks whose lines are shell commands (unlabeled ones too); ``console`` ones only after a ``$`` prompt."""
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}
REDIRECTIONS = {">", ">>", "<", ">&", "<&", ">|"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
USAGE = 2
"""Click's exit code for a usage error: what the CLI answers a command it cannot parse."""


class Command(NamedTuple):
    line: str
    """The command as a reader sees it: ``toolsel`` and its arguments."""
    args: list[str]
    """What ``toolsel`` gets in ``sys.argv[1:]``."""


def shell_lines(markdown: str) -> Iterator[str]:
    """The command lines of the shell blocks of ``markdown``: continuation lines joined, heredoc bodies and
    console output left out."""
    fence: str | None = None
    shell = console = False
    heredoc: str | None = None
    pending = ""
    for line in markdown.splitlines():
        if fence is None:
            if opened := FENCE.match(line):
                fence, label = opened[1], opened[2].lower()
                shell, console, heredoc, pending = label in SHELL_BLOCKS, label == "console", None, ""
            continue
        if line.strip() == fence:
            fence = None
        elif not shell:
            continue
        elif heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
        elif console and not pending and not line.lstrip().startswith("$ "):
            continue  # output
        else:
            text = line.lstrip().removeprefix("$ ") if console and not pending else line
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            command, pending = pending + text, ""
            if delimiter := HEREDOC.search(command):
                heredoc = delimiter[2]
            yield command


def toolsel_commands(line: str) -> Iterator[list[str]]:
    """The arguments of each ``toolsel`` command in a shell line: each simple command of ``a && b; c | d``,
    without leading ``VAR=value`` assignments, redirections or a comment."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for token in [*lexer, ";"]:
        if token in SEPARATORS:
            while words and ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words[:1] == ["toolsel"]:
                yield _without_redirections(words[1:])
            words = []
        else:
            words.append(token)


def _without_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in REDIRECTIONS or word.startswith("<<"):
            skip = True
        else:
            kept.append(word)
    return kept


def documented_commands() -> dict[str, tuple[str, Command]]:
    """Every ``toolsel`` command of the pages, once each: its line -> (the first page showing it, the command)."""
    found: dict[str, tuple[str, Command]] = {}
    for page in PAGES:
        for line in shell_lines(page.read_text()):
            for args in toolsel_commands(line):
                command = Command(shlex.join(["toolsel", *args]), args)
                found.setdefault(command.line, (str(page.relative_to(ROOT)), command))
    return found


def refusal(args: Sequence[str]) -> str | None:
    """Why ``toolsel ARGS`` would be refused before it runs (an unknown command or option, a missing argument, a
    value of the wrong type), or None when it parses. Walks the Click groups built from the typer app, making each
    command's context as ``toolsel`` does, but never invokes one."""
    try:
        context = typer.main.get_command(app).make_context("toolsel", list(args))
        while isinstance(context.command, TyperGroup):
            # what follows the group's own options: the subcommand's name, then its arguments
            rest = [*context._protected_args, *context.args]
            if not rest:
                context.fail("Missing command.")
            name, command, rest = context.command.resolve_command(context, rest)  # refuses an unknown name
            context = command.make_context(name, rest, parent=context)
    except typer.Exit:
        return None  # an eager option (--version) answered before the rest was parsed
    except Exception as error:
        if getattr(error, "exit_code", None) != USAGE or not hasattr(error, "format_message"):
            raise
        return str(error.format_message())
    return None


COMMANDS = documented_commands()


def test_the_docs_show_commands() -> None:
    pages = {page for page, _ in COMMANDS.values()}
    assert COMMANDS, "no `toolsel ...` line found in a shell block of README.md or docs/*.md"
    assert "README.md" in pages, pages


@pytest.mark.parametrize(("page", "command"), COMMANDS.values(), ids=list(COMMANDS))
def test_documented_command_parses(page: str, command: Command) -> None:
    assert refusal(command.args) is None, f"{page}: `{command.line}`: {refusal(command.args)}"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["select", "--bogus", "book a hotel"], "No such option: --bogus"),
        (["select", "book a hotel", "--k", "five"], "Invalid value for '--k'"),
        (["select"], "Missing argument"),
        (["selekt", "book a hotel"], "No such command 'selekt'"),
        (["up", "now"], "unexpected extra argument"),
        (["admin", "rules", "delete"], "Missing argument"),
        (["admin", "rules", "drop", "1"], "No such command 'drop'"),
        (["--debug"], "Missing command"),
        (["tools", "list", "--format", "yaml"], "'yaml' is not one of"),
    ],
)
def test_a_wrong_command_is_refused(args: list[str], reason: str) -> None:
    assert reason in (refusal(args) or "parsed")


@pytest.mark.parametrize(
    "args",
    [
        ["select", "book a hotel", "--k", "5", "--page", "/travel", "--no-rerank"],
        ["--debug", "admin", "rules", "delete", "3"],
        ["docs", "config", "--check"],
        ["--version"],
    ],
)
def test_a_right_command_parses(args: list[str]) -> None:
    assert refusal(args) is None


PAGE = """\
Prose with `toolsel inline --is-ignored`.

```bash
toolsel select "book a hotel" \\
  --page /travel   # a comment
. .venv/bin/activate && TOOLSEL_FUSION=rrf toolsel eval sets/metatool > out.txt; echo done
cat > mail.json <<'JSON'
toolsel not-a-command: heredoc body
JSON
toolsel status | tee status.txt
```

```python
toolsel = "not shell"
```

```console
$ toolsel env --user agent
toolsel output-line
```

```
toolsel up
```
"""


def test_commands_are_taken_from_shell_blocks_only() -> None:
    lines = [args for line in shell_lines(PAGE) for args in toolsel_commands(line)]
    assert lines == [
        ["select", "book a hotel", "--page", "/travel"],
        ["eval", "sets/metatool"],
        ["status"],
        ["env", "--user", "agent"],
        ["up"],
    ]
