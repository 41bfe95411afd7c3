"""MCP over stdio with every line answered. The SDK's stdio transport drops a line it cannot read as a JSON-RPC
message (it logs it at debug level), so a client that sent one waits forever. Each line is checked here first, at
the edge, and one that the SDK would drop gets the error JSON-RPC 2.0 and MCP prescribe instead:

- not UTF-8: -32700 parse error, id null;
- not JSON (checked without recursion, so a line of any depth is checked): -32700 parse error, with the
  request's id when it can be read, else null (the client waits on that id);
- nested deeper than ``MAX_DOCUMENT_DEPTH`` (measured without parsing): -32600 with the request's id when it can
  be read, else null;
- not one request object (an array: MCP has no batches; ``{}``; an id not a string or an integer; ``jsonrpc``
  not "2.0"; no method): -32600 invalid request, with the id when there is a valid one;
- params that are not an object, or that the SDK cannot read (a lone surrogate): -32602 invalid params, with
  the request's id. A notification (no id) gets no reply, as JSON-RPC says, and is dropped.

What passes goes to the SDK's own transport and server unchanged. A line whose check itself fails (a defect
here) gets -32603 internal error, id null: the reader never dies of a line, so later requests are still served.
"""

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import Flag, auto
from typing import Any, BinaryIO, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.types import jsonrpc_message_adapter

from toolsel.contracts.common import MAX_DOCUMENT_DEPTH, too_deep

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MESSAGE_MAX = 200
"""Characters of a refusal's reason quoted in the error message."""

RequestId = str | int


@dataclass(frozen=True)
class Refusal:
    """The error a line gets instead of being served; ``answer`` False for a notification (never answered)."""

    code: int
    message: str
    id: RequestId | None = None
    answer: bool = True

    def response(self) -> str:
        error = {"code": self.code, "message": self.message[:MESSAGE_MAX]}
        return json.dumps({"jsonrpc": "2.0", "id": self.id, "error": error})


def _valid_id(value: Any) -> bool:
    """MCP request ids: a string or an integer (not null, not a bool, not a fraction)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}:,]|[^\s\[\]{}:,"]+')
"""JSON's tokens: strings, punctuation, and scalars (numbers, true, false, null). Possessive, so that a string
left open is given up in linear time (a backtracking ``(?:[^"\\]+|\\.)*`` takes exponential time on it)."""
_BLANK = " \t\n\r"
"""JSON's whitespace: nothing else may stand between tokens."""
_OPENERS = {"[": "]", "{": "}"}
_NOT_JSON = object()


def _value(token: str) -> Any:
    """A string or scalar token's value, or ``_NOT_JSON`` for a token JSON has not (``"\\q"``, ``truex``). Flat, so
    ``json.loads`` cannot recurse on it."""
    try:
        return json.loads(token)
    except ValueError:
        return _NOT_JSON


def top_level_id(text: str) -> RequestId | None:
    """The ``id`` member of the object ``text`` holds, read without parsing the rest (which may be too deep to
    parse, or not JSON): the first key ``id`` at the top level whose value is a string or an integer. A key that
    is not JSON (an invalid escape) is passed over, so an id after it is still read."""
    depth, key, expect_key = 0, None, False
    tokens = _TOKENS.finditer(text)
    for match in tokens:
        token = match.group()
        if token in "[{":
            depth += 1
            expect_key = token == "{" and depth == 1
        elif token in "]}":
            depth -= 1
        elif depth == 1 and token == ",":
            expect_key = True
        elif depth == 1 and expect_key and token.startswith('"'):
            key, expect_key = _value(token), False
        elif depth == 1 and token == ":" and key == "id":
            value = next(tokens, None)
            found = _value(value.group()) if value is not None else None
            return found if _valid_id(found) else None
    return None


class _Next(Flag):
    """What a JSON text may hold next."""

    VALUE = auto()
    KEY = auto()
    COLON = auto()
    COMMA = auto()
    CLOSE = auto()


_AFTER_VALUE = _Next.COMMA | _Next.CLOSE


def _step(expected: _Next, token: str, closers: list[str]) -> _Next | None:
    """What may follow ``token`` where ``expected`` may come, ``closers`` being the brackets that close the arrays
    and objects still open (updated here); None when ``token`` may not stand there."""
    if token in _OPENERS:
        if _Next.VALUE not in expected:
            return None
        closers.append(_OPENERS[token])
        return (_Next.VALUE if token == "[" else _Next.KEY) | _Next.CLOSE
    if token in _OPENERS.values():
        if _Next.CLOSE not in expected or not closers or closers.pop() != token:
            return None
        return _AFTER_VALUE
    if token == ",":
        if _Next.COMMA not in expected or not closers:
            return None
        return _Next.VALUE if closers[-1] == "]" else _Next.KEY
    if token == ":":
        return _Next.VALUE if _Next.COLON in expected else None
    if _value(token) is _NOT_JSON:
        return None
    if _Next.KEY in expected and token.startswith('"'):
        return _Next.COLON
    return _AFTER_VALUE if _Next.VALUE in expected else None


def syntax_error(text: str) -> str | None:
    """Where ``text`` stops being one JSON value, or None when it is one. Found without recursion (a line may nest
    100,000 deep), each string and scalar judged by ``json.loads``, so the two agree."""
    expected = _Next.VALUE
    closers: list[str] = []
    end = 0
    for match in _TOKENS.finditer(text):
        between = text[end : match.start()]
        if between.strip(_BLANK):
            return _unexpected(between, end)
        step = _step(expected, match.group(), closers)
        if step is None:
            return _unexpected(match.group(), match.start())
        expected, end = step, match.end()
    if text[end:].strip(_BLANK):
        return _unexpected(text[end:], end)
    return None if expected == _AFTER_VALUE and not closers else "unexpected end of the line"


def _unexpected(found: str, at: int) -> str:
    """Where a line stops being JSON, for the error message: the first characters there, and where."""
    skipped = len(found) - len(found.lstrip(_BLANK))
    return f"unexpected {found[skipped:][:20]!r} at char {at + skipped}"


def refusal(line: bytes) -> Refusal | None:
    """Why the SDK could not serve ``line``, as the error it must get; None when the line is fine."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return Refusal(PARSE_ERROR, f"Parse error: not UTF-8 text ({error.reason} at byte {error.start})")
    wrong = syntax_error(text)  # first: the depth is measured only on JSON
    if wrong is not None:
        return Refusal(PARSE_ERROR, f"Parse error: {wrong}", top_level_id(text))
    deep = too_deep(text, MAX_DOCUMENT_DEPTH)
    if deep is not None:
        return Refusal(INVALID_REQUEST, f"Invalid Request: {deep}", top_level_id(text))
    message = json.loads(text)
    shape = _envelope(message)
    if shape is not None:
        return shape
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as error:
        first = str(error).splitlines()[1:2] or [str(error)]
        return _for(message, INVALID_PARAMS, f"Invalid params: {first[0].strip()}")
    return None


def checked(line: bytes) -> Refusal | None:
    """``refusal``, which no line may raise out of: a failure of the check itself (a defect) is logged and
    answered as an internal error, so the reader that serves every later line goes on."""
    try:
        return refusal(line)
    except Exception:
        log.exception("could not check a line of %d bytes", len(line))
        return Refusal(INTERNAL_ERROR, "Internal error: the line could not be checked")


def _for(message: dict[str, Any], code: int, text: str) -> Refusal:
    """A refusal of a message that has a valid envelope: answered with its id, not answered if a notification."""
    has_id = "id" in message
    return Refusal(code, text, message.get("id") if has_id else None, answer=has_id)


def _envelope(message: Any) -> Refusal | None:
    """What is wrong with a parsed message's JSON-RPC envelope, if anything."""
    if isinstance(message, list):
        why = "an empty array" if not message else "a batch (MCP does not take batches)"
        return Refusal(INVALID_REQUEST, f"Invalid Request: {why}")
    if not isinstance(message, dict):
        return Refusal(INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if "id" in message and not _valid_id(message["id"]):
        return Refusal(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    known = message.get("id")
    if message.get("jsonrpc") != "2.0":
        return Refusal(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', known)
    if "method" not in message:
        if known is not None and ("result" in message or "error" in message):
            return None  # a response to a request of the server's
        return Refusal(INVALID_REQUEST, "Invalid Request: no method", known)
    if not isinstance(message["method"], str):
        return Refusal(INVALID_REQUEST, "Invalid Request: method must be a string", known)
    if "params" in message and not isinstance(message["params"], dict):
        return _for(message, INVALID_PARAMS, "Invalid params: params must be an object")
    return None


class Wire:
    """The process's stdout as the SDK's transport writes it, shared with the refusals: whole lines, each
    written and flushed in one step, so a refusal never lands inside a reply."""

    def __init__(self, out: BinaryIO):
        self.out = out

    async def write(self, text: str) -> int:
        self.out.write(text.encode("utf-8"))
        return len(text)

    async def flush(self) -> None:
        self.out.flush()

    def send(self, line: str) -> None:
        self.out.write(line.encode("utf-8") + b"\n")
        self.out.flush()


async def checked_lines(source: BinaryIO, wire: Wire) -> AsyncIterator[str]:
    """The lines of ``source`` that the SDK can serve; each other one answered on ``wire`` (or, a notification,
    dropped)."""
    async for line in anyio.wrap_file(source):
        if not line.strip():
            continue
        refused = checked(line.rstrip(b"\r\n"))
        if refused is None:
            yield line.decode("utf-8")
        elif refused.answer:
            wire.send(refused.response())
        else:
            log.warning("dropped a notification: %s", refused.message)


async def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin and stdout through the SDK's stdio transport, each line checked
    first (see the module). While it serves, file descriptor 1 points at stderr and the wire is a copy of it, as
    the SDK does with its own streams: a stray print cannot corrupt a message."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with os.fdopen(os.dup(saved), "wb") as out:
            wire = Wire(out)
            lines = cast(anyio.AsyncFile[str], checked_lines(sys.stdin.buffer, wire))
            async with stdio_server(stdin=lines, stdout=cast(anyio.AsyncFile[str], wire)) as (read, write):
                lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs on the SDK's streams
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
