"""Every command that prints a reply offers the same output options (``--format table|json``, ``--json`` for
short, ``csv`` on listings of flat rows); a reply prints as each of them; a command line the CLI cannot parse is
one line on stderr. No stack runs."""

import csv
import io
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import typer

from toolsel.cli import admin, main
from toolsel.cli.running import Format, Rows, print_reply
from toolsel.contracts.admin import PageMapping, PageMappingList, RuleList, VisibilityRule

LISTINGS = {
    ("tools", "list"), ("tools", "versions"), ("tools", "drift"), ("admin", "page-categories"),
    ("admin", "page-mappings", "list"), ("admin", "rules", "list"), ("admin", "quarantine", "list"),
    ("feedback", "list"), ("feedback", "metrics"), ("analytics", "heatmap"), ("analytics", "accuracy"), ("sync",),
    ("identity", "list"), ("pins", "list"), ("pins", "pin"), ("pins", "unpin"), ("pins", "clear"),
}  # fmt: skip
"""The commands whose reply is flat rows: they also write CSV."""
REPLIES = {
    ("status",), ("select",), ("tools", "show"), ("tools", "rollback"), ("tools", "approve"), ("tools", "recompute"),
    ("tools", "register"), ("tools", "update"), ("tools", "delete"), ("admin", "categories"),
    ("admin", "test-selection"), ("admin", "page-mappings", "create"), ("admin", "page-mappings", "delete"),
    ("admin", "rules", "create"), ("admin", "rules", "update"), ("admin", "rules", "delete"),
    ("admin", "quarantine", "release"), ("analytics", "metrics"),
}  # fmt: skip
"""The commands whose reply is one object: table or JSON."""


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf command of the Click tree typer builds, with its path (typer may bundle its own Click)."""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))
    if not hasattr(command, "commands"):
        yield path, command


def _formats() -> dict[tuple[str, ...], tuple[tuple[str, ...], bool]]:
    """Command -> (its --format choices, whether --json is a flag short for --format json)."""
    found = {}
    for path, command in _commands(typer.main.get_command(main.app)):
        options = {opt: param for param in command.params for opt in param.opts}
        if "--format" in options:
            as_json = options.get("--json")
            found[path] = (tuple(options["--format"].type.choices), bool(as_json and as_json.is_flag))
    return found


def test_every_reply_has_the_same_output_options() -> None:
    formats = _formats()
    assert set(formats) == LISTINGS | REPLIES
    for path in LISTINGS:
        assert formats[path] == (("table", "json", "csv"), True), path
    for path in REPLIES:
        assert formats[path] == (("table", "json"), True), path


RULE = VisibilityRule(
    id=3, created_at=datetime(2026, 1, 2, tzinfo=UTC), rule_type="role", effect="deny", target_kind="tool",
    target="mail/send_email", conditions={"role": {"in": ["guest"]}}, priority=10,
)  # fmt: skip


def test_a_listing_prints_as_a_table_json_or_csv_even_when_empty(capsys: pytest.CaptureFixture[str]) -> None:
    show = Rows("visibility rules", "rules")
    print_reply(RuleList(rules=[RULE]), Format.csv, show)
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (row["id"], row["target"], row["conditions"]) == ("3", "mail/send_email", '{"role": {"in": ["guest"]}}')
    print_reply(RuleList(rules=[]), Format.csv, show)
    assert capsys.readouterr().out.startswith("tenant_id,rule_type,effect,target_kind,target,conditions,")
    print_reply(RuleList(rules=[]), Format.table, show)
    assert "target_kind" in capsys.readouterr().out
    print_reply(RuleList(rules=[RULE]), Format.json, show)
    assert json.loads(capsys.readouterr().out)["rules"][0]["id"] == 3


def test_an_object_has_no_csv(capsys: pytest.CaptureFixture[str]) -> None:
    mapping = PageMapping(plugin_id="mail", page_pattern="/outbox*", category="communication", priority=5)
    with pytest.raises(typer.Exit) as refused:
        print_reply(mapping, Format.csv, print)
    assert refused.value.exit_code == 2
    print_reply(PageMappingList(mappings=[mapping]), Format.table, Rows("page mappings", "mappings"))
    assert "/outbox*" in capsys.readouterr().out


def test_an_admin_write_is_confirmed_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    admin._ruled("created")(RULE)
    line = capsys.readouterr().out
    assert line == (
        'rule 3 created: deny tool mail/send_email for tenant * when {"role": {"in": ["guest"]}} '
        "(role rule, priority 10)\n"
    )


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["toolsel", *args])
    with pytest.raises(SystemExit) as done:
        main.main()
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("tools", "show", "mail", "send_email", "--format", "csv"), "'csv' is not one of 'table', 'json'"),
        (("selekt", "book a hotel"), "No such command 'selekt'"),
        (("select", "x", "--k", "five"), "Invalid value for '--k'"),
        (("admin", "rules", "delete"), "Missing argument"),
    ],
)
def test_a_command_line_that_does_not_parse_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], named: str
) -> None:
    code, out, err = _main(monkeypatch, capsys, *args)
    assert code == 2
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ")
    assert named in line
    assert "--help`)" in line


def test_help_and_version_still_exit_zero(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(monkeypatch, capsys, "--version")[:2] == (0, f"toolsel {main.version('toolsel')}\n")
    code, out, _ = _main(monkeypatch, capsys, "tools", "--help")
    assert code == 0
    assert "list" in out
    code, out, err = _main(monkeypatch, capsys, "admin")  # a group alone shows its help
    assert code == 2
    assert "rules" in out + err
    assert "error" not in err
