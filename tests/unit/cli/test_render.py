"""Tables never cut an identifier: piped they are as wide as their rows, on a narrow terminal they wrap; an empty
listing keeps its header; CSV keeps every value; a selection's summary is one line of its own."""

import csv
import io
import json
from datetime import UTC, datetime
from uuid import uuid4

import pytest
from rich.console import Console, RenderableType

from toolsel import render
from toolsel.contracts import SelectReply
from toolsel.render import EXPLAIN, PIPED_WIDTH, cell, clipped, rows_csv, rows_table, selection_view

ROWS = [
    {"tool": "developer-productivity-tools/create_pull_request_with_reviewers", "score": 0.12345, "tags": ["a"]},
    {"tool": "short/x", "score": None, "tags": []},
]


def _render(width: int, renderable: RenderableType | None = None) -> str:
    out = io.StringIO()
    Console(file=out, width=width).print(renderable if renderable is not None else rows_table("tools", ROWS))
    return out.getvalue()


def test_piped_rows_are_whole_on_one_line() -> None:
    text = _render(PIPED_WIDTH)
    assert any(ROWS[0]["tool"] in line and "0.123" in line for line in text.splitlines())  # type: ignore[operator]
    assert "…" not in text


def test_a_narrow_terminal_wraps_rather_than_cuts() -> None:
    text = _render(40)
    assert "…" not in text
    assert all(len(line) <= 40 for line in text.splitlines())
    letters = "".join(ch for line in text.splitlines() for ch in line if ch.isalnum() or ch in "-_/")
    assert "create_pull_request_with" in letters


def test_csv_keeps_every_value() -> None:
    read = list(csv.DictReader(io.StringIO(rows_csv(ROWS))))
    assert read[0] == {"tool": ROWS[0]["tool"], "score": "0.12345", "tags": '["a"]'}
    assert read[1] == {"tool": "short/x", "score": "", "tags": "[]"}


def test_an_empty_listing_keeps_its_header() -> None:
    assert rows_csv([], ["plugin_id", "name"]) == "plugin_id,name\n"
    header = _render(PIPED_WIDTH, rows_table("rules", [], ["tenant_id", "target"]))
    assert "tenant_id" in header
    assert "target" in header


def test_a_cell_is_plain_text_and_a_time_is_to_the_second() -> None:
    assert cell(datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=UTC)) == "2026-01-02 03:04:05"
    text = _render(PIPED_WIDTH, rows_table("[red]title[/]", [{"reason": "[bold]not markup[/bold]"}]))
    assert "[bold]not markup[/bold]" in text
    assert "[red]title[/]" in text


def test_a_long_value_is_clipped_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "x" * 100
    monkeypatch.setattr(render, "console", Console(width=80))
    assert clipped(value, 10) == "x" * 9 + "…"
    assert clipped("short", 10) == "short"
    monkeypatch.setattr(render, "console", Console(width=PIPED_WIDTH))
    assert clipped(value, 10) == value


def _reply(*pinned: bool) -> SelectReply:
    tools = [
        {"plugin_id": "mail", "name": f"tool_{i}", "description": "d", "parameters": {}, "score": 0.5, "pinned": pin,
         "breakdown": {}}
        for i, pin in enumerate(pinned)
    ]  # fmt: skip
    return SelectReply.model_validate(
        {"selection_id": uuid4(), "tools": tools, "context_key": "free:*:none", "method": "hybrid",
         "tokens": {"selected": 0, "catalog": 24922, "saved": 24922}, "latency_ms": 10.04}
    )  # fmt: skip


def test_an_empty_selection_says_so_on_one_line_not_squeezed_under_the_table() -> None:
    lines = _render(PIPED_WIDTH, selection_view(_reply(), "xyzzy")).splitlines()
    assert lines[-1].strip() == (
        "0 tools · 10.0 ms in the selector · method hybrid · context free:*:none · tokens 0 of 24922"
    )
    narrow = _render(60, selection_view(_reply(), "xyzzy")).splitlines()
    assert narrow[-2].startswith("0 tools · 10.0 ms in the selector · method hybrid")  # wraps at 60, not at 26


def test_a_selection_says_how_many_pinned_tools_came_on_top_of_k() -> None:
    text = _render(PIPED_WIDTH, selection_view(_reply(False, True), "q", k=1))
    assert "2 tools: 1 pinned on top of the k=1 asked for · 10.0 ms" in text
    assert "1 tool · " in _render(PIPED_WIDTH, selection_view(_reply(False), "q", k=1))


CONTROLS = {"tool": "evil\x1b[2J\x07name", "note": "del\x7f c1\x9b"}


def test_control_characters_are_escaped_in_tables_and_csv() -> None:
    for text in (_render(PIPED_WIDTH, rows_table("x\x1btitle", [CONTROLS])), rows_csv([CONTROLS])):
        assert not render.CONTROL.search(text), repr(text)
        assert "evil\\x1b[2J\\x07name" in text
        assert "del\\x7f c1\\x9b" in text


def test_control_characters_are_escaped_in_json() -> None:
    shown = render.printable_json(json.dumps(CONTROLS, ensure_ascii=False))
    assert not render.CONTROL.search(shown)
    assert json.loads(shown) == CONTROLS


def _explained() -> SelectReply:
    """A demo-like reply: long identifiers, every part of the score."""
    names = [
        ("demo-toolsel-core", "search_tools"),
        ("demo-travel-suite", "WeatherTool"),
        ("demo-travel-suite", "TripTool"),
    ]
    breakdown = {part: 0.123456 for part in EXPLAIN if part not in ("alpha", "beta")} | {"alpha": 12.5, "beta": 3.25}
    tools = [
        {"plugin_id": p, "name": n, "description": "d", "parameters": {}, "score": 0.91234, "pinned": i == 0,
         "breakdown": breakdown}
        for i, (p, n) in enumerate(names)
    ]  # fmt: skip
    return SelectReply.model_validate(
        {"selection_id": uuid4(), "tools": tools, "context_key": "free:/travel:general", "method": "hybrid",
         "tokens": {"selected": 120, "catalog": 24742, "saved": 24622}, "latency_ms": 10.04}
    )  # fmt: skip


@pytest.mark.parametrize("width", [80, 120])
def test_an_explained_selection_on_a_narrow_terminal_keeps_every_identifier_and_number_whole(width: int) -> None:
    text = _render(width, selection_view(_explained(), "find me a cheap flight to Paris next week", EXPLAIN))
    assert all(len(line) <= width for line in text.splitlines())
    words = text.split()
    for tool in _explained().tools:
        assert any(tool.key in word for word in words), tool.key
    assert "score=0.912" in words
    assert {"similarity=0.123", "alpha=12.5", "beta=3.25"} <= set(words)
    assert "24742" in words


def test_an_explained_selection_that_fits_stays_a_table() -> None:
    text = _render(200, selection_view(_explained(), "q", EXPLAIN))
    assert any("demo-travel-suite/TripTool" in line and "12.5" in line for line in text.splitlines())


def test_a_listing_too_wide_for_the_terminal_is_records_with_its_fields_whole() -> None:
    text = _render(30, rows_table("rules", [], ["tenant_id", "rule_type", "target_kind", "conditions"]))
    assert "target_kind" in text.replace(",", " ").split()
    wide = _render(50, rows_table("tools", [ROWS[0] | {"note": "a long note that takes room"}]))
    assert "0.123" in wide.split()
