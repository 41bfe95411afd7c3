"""Every malformed JSON-RPC line gets the error the specification says (JSON-RPC 2.0 and MCP), with the request's
id when it has a valid one; a notification is never answered; a well-formed message passes to the SDK."""

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolsel.contracts.common import MAX_DOCUMENT_DEPTH
from toolsel.mcp import stdio
from toolsel.mcp.stdio import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    checked,
    refusal,
    syntax_error,
    top_level_id,
)

DEEP = 100_000
BAD_KEY_DEEP = b'{"\\q":1,"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":' + b"[" * 70 + b"]" * 70 + b"}}"
"""A line that once killed the server: a key with an invalid escape, nested too deep to parse."""
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "search_tools", "arguments": {}}}


def _line(message: object) -> bytes:
    return json.dumps(message).encode()


@pytest.mark.parametrize(
    ("line", "code", "id_"),
    [
        (b"not json", PARSE_ERROR, None),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "x"', PARSE_ERROR, 1),
        (
            b'{"jsonrpc": "2.0", "id": "open", "method": "x", "params": {"q": "unterminated' + b"x" * 60,
            PARSE_ERROR,
            "open",
        ),
        (BAD_KEY_DEEP, PARSE_ERROR, 7),
        (BAD_KEY_DEEP.replace(b'"id":7', b'"id":[7]'), PARSE_ERROR, None),
        (b'{"jsonrpc": "2.0", "id": 2, "method": "x", "params": {"a": ' + b"[" * DEEP + b"}}", PARSE_ERROR, 2),
        (b"\xff\xfe\x00binary", PARSE_ERROR, None),
        (b"{}", INVALID_REQUEST, None),
        (b"[]", INVALID_REQUEST, None),
        (_line([CALL, CALL]), INVALID_REQUEST, None),
        (b"42", INVALID_REQUEST, None),
        (_line({**CALL, "id": {"a": 1}}), INVALID_REQUEST, None),
        (_line({**CALL, "id": 1.5}), INVALID_REQUEST, None),
        (_line({**CALL, "id": True}), INVALID_REQUEST, None),
        (_line({**CALL, "id": None}), INVALID_REQUEST, None),
        (_line({"jsonrpc": "2.0", "id": 3}), INVALID_REQUEST, 3),
        (_line({**CALL, "method": 5}), INVALID_REQUEST, 7),
        (_line({**CALL, "jsonrpc": "1.0"}), INVALID_REQUEST, 7),
        (_line({k: v for k, v in CALL.items() if k != "jsonrpc"}), INVALID_REQUEST, 7),
        (_line({**CALL, "params": [1, 2]}), INVALID_PARAMS, 7),
        (_line({**CALL, "params": "text"}), INVALID_PARAMS, 7),
        (b'{"jsonrpc": "2.0", "id": "q", "method": "tools/call", "params": {"query": "\\ud800"}}', INVALID_PARAMS, "q"),
        (
            b'{"jsonrpc": "2.0", "id": 9, "method": "x", "params": {"a": ' + b"[" * DEEP + b"]" * DEEP + b"}}",
            INVALID_REQUEST,
            9,
        ),
        (b'{"params": {"a": ' + b"[" * DEEP + b"]" * DEEP + b'}, "id": "late"}', INVALID_REQUEST, "late"),
        (b"[" * DEEP, PARSE_ERROR, None),
    ],
)
def test_each_malformed_line_gets_its_error(line: bytes, code: int, id_: object) -> None:
    refused = refusal(line)
    assert refused is not None
    assert refused.answer
    assert (refused.code, refused.id) == (code, id_)
    response = json.loads(refused.response())
    assert response == {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": refused.message}}


@pytest.mark.parametrize(
    "message",
    [
        CALL,
        {"jsonrpc": "2.0", "id": "abc", "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no"}},
    ],
)
def test_a_well_formed_message_passes(message: object) -> None:
    assert refusal(_line(message)) is None


def test_a_notification_with_bad_params_is_not_answered() -> None:
    refused = refusal(_line({"jsonrpc": "2.0", "method": "notifications/progress", "params": [1]}))
    assert refused is not None
    assert (refused.code, refused.answer) == (INVALID_PARAMS, False)


def test_the_depth_limit_is_the_documents() -> None:
    nested = b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"a": %s}}'
    depth = MAX_DOCUMENT_DEPTH - 2  # the envelope and params are two levels
    assert refusal(nested % (b"[" * depth + b"]" * depth)) is None
    assert refusal(nested % (b"[" * (depth + 1) + b"]" * (depth + 1))) is not None


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"id": 4, "method": "x"}', 4),
        ('{"method": "x", "params": {"id": 99}, "id": "mine"}', "mine"),
        ('{"params": [{"id": 1}], "id": -2}', -2),
        ('{"id": 1.5}', None),
        ('{"id": {"a": 1}}', None),
        ('{"method": "x"}', None),
        ('[{"id": 1}]', None),
        ('{"\\q": 1, "id": 5}', 5),
        ('{"id": "\\q"}', None),
        ('{"a": "never closed, "id": 6', None),
        ('{"id": 8, "a": "' + "x" * 10_000, 8),
        ('{"id": ' + "9" * 5000 + "}", None),
    ],
)
def test_top_level_id(text: str, found: object) -> None:
    assert top_level_id(text) == found


def test_reading_an_unterminated_string_takes_linear_time() -> None:
    """A backtracking string pattern took seconds on 26 characters of an unclosed string, doubling with each."""
    started = time.monotonic()
    line = b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"q": "' + b"a" * 1_000_000
    assert refusal(line) is not None
    assert time.monotonic() - started < 5


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)
edits = st.lists(
    st.tuples(st.integers(0, 200), st.sampled_from(list('{}[]:,"\\ \t0-eEtnq\x00\xa0')), st.booleans()), max_size=3
)
"""Characters put into (or over) a JSON text: most make it not JSON, some leave it JSON."""


@given(json_values, edits)
def test_syntax_error_agrees_with_json_loads(value: object, changes: list[tuple[int, str, bool]]) -> None:
    """The check that needs no recursion finds a text JSON exactly when the parser does."""
    text = json.dumps(value, ensure_ascii=False)
    for at, char, over in changes:
        text = text[:at] + char + text[at + over :]
    try:
        json.loads(text)
    except ValueError:
        assert syntax_error(text) is not None
    else:
        assert syntax_error(text) is None


def test_a_check_that_fails_is_answered_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> str | None:
        raise RuntimeError("a defect in the check")

    monkeypatch.setattr(stdio, "syntax_error", broken)
    refused = checked(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
    assert refused is not None
    assert (refused.code, refused.id, refused.answer) == (INTERNAL_ERROR, None, True)
