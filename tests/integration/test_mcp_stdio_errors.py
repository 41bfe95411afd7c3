"""``toolsel mcp`` over stdio, as a desktop client launches it, fed the malformed lines that once went unanswered:
each gets the JSON-RPC error the specification says, within seconds, and the session keeps serving afterwards
(a well-formed request after them is answered by the SDK's server)."""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.integration.test_mcp import agent_environment
from toolsel.chaos.mcp_lines import LINES
from toolsel.mcp.stdio import PARSE_ERROR
from toolsel.stack import TOOLSEL_COMMAND, Stack

ANSWER_S = 30.0
TOOLS = {"search_tools", "review_tools", "report_outcome"}
LIST = b'{"jsonrpc": "2.0", "id": 99, "method": "tools/list"}'


async def _answer(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), ANSWER_S)
    assert line, "the server closed stdout"
    answer: dict[str, Any] = json.loads(line)
    return answer


async def _send(process: asyncio.subprocess.Process, line: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(line + b"\n")
    await process.stdin.drain()


@asynccontextmanager
async def _session(stack: Stack) -> AsyncIterator[asyncio.subprocess.Process]:
    """``toolsel mcp`` as the stack's agent, initialised; its stdin closed (and its exit awaited) at the end."""
    command, *args = TOOLSEL_COMMAND
    process = await asyncio.create_subprocess_exec(
        command,
        *args,
        "mcp",
        env=agent_environment(stack),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=2**20,
    )
    try:
        initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await _send(
            process, json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}).encode()
        )
        assert "result" in await _answer(process)
        await _send(process, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield process
    finally:
        if process.stdin is not None:
            process.stdin.close()
        await asyncio.wait_for(process.wait(), 30)


async def _lists_the_tools(process: asyncio.subprocess.Process) -> None:
    await _send(process, LIST)
    listed = await _answer(process)
    assert listed["id"] == 99
    assert {t["name"] for t in listed["result"]["tools"]} == TOOLS


async def test_every_malformed_line_is_answered_and_the_session_goes_on(stack: Stack) -> None:
    async with _session(stack) as process:
        for line, code, id_ in LINES.values():
            await _send(process, line)
            answer = await _answer(process)
            assert (answer["id"], answer["error"]["code"]) == (id_, code), (line[:80], answer)
        await _lists_the_tools(process)


async def test_a_deep_line_that_is_not_json_is_a_parse_error_and_the_session_goes_on(stack: Stack) -> None:
    """A key with an invalid escape, nested deeper than may be parsed, once ended the process (the id reader
    raised out of the line reader)."""
    line = b'{"\\q":1,"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":' + b"[" * 70 + b"]" * 70 + b"}}"
    async with _session(stack) as process:
        await _send(process, line)
        answer = await _answer(process)
        assert (answer["id"], answer["error"]["code"]) == (7, PARSE_ERROR), answer
        await _lists_the_tools(process)
        assert process.returncode is None
