"""MCP over stdio with every line answered. The SDK's stdio transport drops a line it cannot read as a JSON-RPC
message (it logs it at debug level), so a client that sent one waits forever. Each line is checked here first, at
the edge, and one that the SDK would drop gets the error JSON-RPC 2.0 and MCP prescribe instead:

- not UTF-8 or not JSON: -32700 parse error, id null;
- nested deeper than ``MAX_DOCUMENT_DEPTH`` (measured without parsing): -32600 with the request's id when it can
  be read, else null;
- not one request object (an array: MCP has no batches; ``{}``; an id not a string or an integer; ``jsonrpc``
  not "2.0"; no method): -32600 invalid request, with the id when there is a valid one;
- params that are not an object, or that the SDK cannot read (a lone surrogate): -32602 invalid params, with
  the request's id. A notification (no id) gets no reply, as JSON-RPC says, and is dropped.

What passes goes to the SDK's own transport and server unchanged.
"""

import json
import logging
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
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


_TOKENS = re.compile(r'"(?:[^"\\]+|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')
"""JSON's tokens: strings, punctuation, and scalars (numbers, true, false, null)."""


def top_level_id(text: str) -> RequestId | None:
    """The ``id`` member of the object ``text`` holds, read without parsing the rest (which may be too deep to
    parse): the first key ``id`` at the top level whose value is a string or an integer."""
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
            key, expect_key = json.loads(token), False
        elif depth == 1 and token == ":" and key == "id":
            value = next(tokens, None)
            try:
                found = json.loads(value.group()) if value is not None else None
            except ValueError:
                return None
            return found if _valid_id(found) else None
    return None


def refusal(line: bytes) -> Refusal | None:
    """Why the SDK could not serve ``line``, as the error it must get; None when the line is fine."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return Refusal(PARSE_ERROR, f"Parse error: not UTF-8 text ({error.reason} at byte {error.start})")
    deep = too_deep(text, MAX_DOCUMENT_DEPTH)
    if deep is not None:
        return Refusal(INVALID_REQUEST, f"Invalid Request: {deep}", top_level_id(text))
    try:
        message = json.loads(text)
    except ValueError as error:
        return Refusal(PARSE_ERROR, f"Parse error: {error}")
    shape = _envelope(message)
    if shape is not None:
        return shape
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as error:
        first = str(error).splitlines()[1:2] or [str(error)]
        return _for(message, INVALID_PARAMS, f"Invalid params: {first[0].strip()}")
    return None


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
        refused = refusal(line.rstrip(b"\r\n"))
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
