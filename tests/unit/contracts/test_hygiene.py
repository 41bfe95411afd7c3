"""Input hygiene at the edge: nesting measured without recursion (100,000 brackets are a number, not a crash),
control characters refused in names, category parents that form a cycle refused, and length errors that count
characters."""

import subprocess
import sys

import pytest
from pydantic import TypeAdapter, ValidationError

from toolsel.contracts import FeedbackEvent, PluginSync, ToolSpec
from toolsel.contracts.common import MAX_DOCUMENT_DEPTH, JsonObject, ToolName, json_depth, too_deep
from toolsel.contracts.registry import parent_cycle

DEEP = 100_000


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]]"]', 1),
        ('["\\"[[[", 2]', 1),
        ("[" * DEEP + "]" * DEEP, DEEP),
        ("[" * DEEP, DEEP),
        ("]]]]", 0),
    ],
)
def test_json_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_an_unclosed_string_is_counted_in_one_pass() -> None:
    """A string never closed cost time doubling with each of its characters (40 took hours). In a process of its
    own, since a regular expression holds the interpreter until it ends: a hang fails at the timeout."""
    code = "import sys; from toolsel.contracts.common import json_depth; print(json_depth(sys.stdin.read()))"
    text = '[[{"key": "' + "value " * 20_000
    ran = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, text=True, timeout=20)
    assert ran.stdout.strip() == "3", ran.stderr


def test_too_deep_names_the_depth_and_the_limit() -> None:
    assert too_deep("[" * MAX_DOCUMENT_DEPTH + "]" * MAX_DOCUMENT_DEPTH) is None
    deeper = MAX_DOCUMENT_DEPTH + 1
    assert too_deep("[" * deeper + "]" * deeper) == (
        f"JSON nested {deeper} levels deep, more than the {MAX_DOCUMENT_DEPTH} allowed"
    )


def test_a_deep_python_value_is_refused_without_recursion() -> None:
    value: dict[str, object] = {}
    inner = value
    for _ in range(DEEP):  # far past Python's recursion limit: a recursive walk would raise RecursionError
        inner["x"] = {}
        inner = inner["x"]  # type: ignore[assignment]
    with pytest.raises(ValidationError, match="nested deeper than"):
        TypeAdapter(JsonObject).validate_python(value)


@pytest.mark.parametrize("name", ["get\x1bweather", "ring\x07", "tab\there", "del\x7f", "c1\x9b"])
def test_control_characters_are_refused_in_names(name: str) -> None:
    with pytest.raises(ValidationError, match="control character"):
        TypeAdapter(ToolName).validate_python(name)
    with pytest.raises(ValidationError, match="control character"):
        ToolSpec(name="fine", description="x", display_name=name)


@pytest.mark.parametrize("name", [".", ".."])
def test_a_name_a_path_would_read_as_here_or_up_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="not allowed as a name"):
        TypeAdapter(ToolName).validate_python(name)
    assert TypeAdapter(ToolName).validate_python(name + "x") == name + "x"


def test_names_with_unicode_letters_pass() -> None:
    assert TypeAdapter(ToolName).validate_python("météo_ünicode") == "météo_ünicode"


@pytest.mark.parametrize(
    ("parents", "cycle"),
    [
        ({"a": None, "b": "a", "c": "b"}, []),
        ({"a": "elsewhere"}, []),
        ({"a": "a"}, ["a", "a"]),
        ({"a": "b", "b": "a"}, ["a", "b", "a"]),
        ({"root": None, "x": "y", "y": "z", "z": "x", "w": "x"}, ["x", "y", "z", "x"]),
    ],
)
def test_parent_cycle(parents: dict[str, str | None], cycle: list[str]) -> None:
    assert parent_cycle(parents) == cycle


def test_a_sync_whose_categories_form_a_cycle_is_refused() -> None:
    categories = [{"name": "a", "parent": "c"}, {"name": "b", "parent": "a"}, {"name": "c", "parent": "b"}]
    with pytest.raises(ValidationError, match=r"the parents form a cycle \(a -> c -> b -> a\)"):
        PluginSync(plugin_id="p", plugin_version="1.0.0", tools=[], categories=categories)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "limit"),
    [
        (lambda: ToolSpec(name="x", description="d" * 8001), 8000),
        (lambda: ToolSpec(name="x", description="d", display_name="n" * 257), 256),
        (lambda: FeedbackEvent(tenant_id="t", plugin_id="p", name="x", rating=1, comment="c" * 2001), 2000),
    ],
)
def test_length_errors_count_characters(make: object, limit: int) -> None:
    with pytest.raises(ValidationError) as refused:
        make()  # type: ignore[operator]
    message = refused.value.errors()[0]["msg"]
    assert f"at most {limit} characters" in message
    assert "items" not in message
