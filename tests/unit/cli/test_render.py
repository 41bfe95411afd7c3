"""Tables never cut an identifier: piped they are as wide as their rows, on a narrow terminal they wrap; CSV
keeps every value."""

import csv
import io

from rich.console import Console

from toolsel.render import PIPED_WIDTH, rows_csv, rows_table

ROWS = [
    {"tool": "developer-productivity-tools/create_pull_request_with_reviewers", "score": 0.12345, "tags": ["a"]},
    {"tool": "short/x", "score": None, "tags": []},
]


def _render(width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width).print(rows_table("tools", ROWS))
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
