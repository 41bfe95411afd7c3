"""MCP stdio: ``toolsel mcp`` launched as a desktop client launches it, fed every kind of malformed JSON-RPC line
(``LINES``); each must be answered with the error the specification says, within seconds, and the session must
still serve a well-formed request afterwards."""

import asyncio
import json
import os
import time
from typing import Any

from toolsel.chaos.stage import Stage
from toolsel.mcp.stdio import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from toolsel.stack import TOOLSEL_COMMAND

DEEP = 100_000
ANSWER_S = 10.0
_CALL = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}'
LINES: dict[str, tuple[bytes, int, int | None]] = {
    "not json": (b"this is not json", PARSE_ERROR, None),
    "empty object": (b"{}", INVALID_REQUEST, None),
    "empty array": (b"[]", INVALID_REQUEST, None),
    "batch": (
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]',
        INVALID_REQUEST,
        None,
    ),
    "object id": (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', INVALID_REQUEST, None),
    "missing method": (b'{"jsonrpc": "2.0", "id": 11}', INVALID_REQUEST, 11),
    "array params": (_CALL % (12, b"[1, 2]"), INVALID_PARAMS, 12),
    "jsonrpc 1.0": (b'{"jsonrpc": "1.0", "id": 13, "method": "ping"}', INVALID_REQUEST, 13),
    "100,000-deep params": (_CALL % (14, b'{"a": ' + b"[" * DEEP + b"]" * DEEP + b"}"), INVALID_REQUEST, 14),
    "binary": (b"\x00\xff\xfe binary \x80\x81", PARSE_ERROR, None),
    "lone surrogate": (
        _CALL % (15, b'{"name": "search_tools", "arguments": {"query": "\\ud800"}}'),
        INVALID_PARAMS,
        15,
    ),
}
"""What each line is, the line, the error code it must get and the id that error must carry."""
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "chaos", "version": "1"}}


class Session:
    """One ``toolsel mcp`` over pipes: a line out, a line back."""

    def __init__(self, process: asyncio.subprocess.Process):
        self.process = process

    async def ask(self, line: bytes) -> dict[str, Any] | None:
        """Send ``line``; the answer, or None when none came within ``ANSWER_S``."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()
        try:
            answer = await asyncio.wait_for(self.process.stdout.readline(), ANSWER_S)
        except TimeoutError:
            return None
        return json.loads(answer) if answer else None


async def open_session(stage: Stage) -> Session:
    """``toolsel mcp`` as the stage's stack's default agent identity (found through its home; it serves its own
    tenant), initialised."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLSEL_NATS_URL"}
    env["TOOLSEL_HOME"] = str(stage.stack.settings.home)
    command, *args = TOOLSEL_COMMAND
    process = await asyncio.create_subprocess_exec(
        command, *args, "mcp", env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**20,
    )  # fmt: skip
    session = Session(process)
    hello = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}).encode()
    if await session.ask(hello) is None:
        raise RuntimeError("toolsel mcp did not answer initialize")
    process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')  # type: ignore[union-attr]
    return session


async def mcp_lines(stage: Stage, rounds: int) -> dict[str, Any]:
    """Every line of ``LINES`` ``rounds`` times on one session, then a well-formed request."""
    session = await open_session(stage)
    started = time.monotonic()
    unanswered: dict[str, int] = {}
    wrong: dict[str, int] = {}
    answered = 0
    try:
        for _ in range(rounds):
            for kind, (line, code, id_) in LINES.items():
                answer = await session.ask(line)
                if answer is None:
                    unanswered[kind] = unanswered.get(kind, 0) + 1
                    continue
                answered += 1
                if (answer.get("id"), answer.get("error", {}).get("code")) != (id_, code):
                    wrong[kind] = wrong.get(kind, 0) + 1
        listed = await session.ask(b'{"jsonrpc": "2.0", "id": 99, "method": "tools/list"}')
    finally:
        assert session.process.stdin is not None
        session.process.stdin.close()
        await asyncio.wait_for(session.process.wait(), 30)
    return {
        "kinds": len(LINES),
        "sent": rounds * len(LINES),
        "answered": answered,
        "unanswered": unanswered,
        "wrong_error": wrong,
        "serving_after": bool(listed and "result" in listed),
        "seconds": round(time.monotonic() - started, 1),
    }
