"""What a flood of wrong bearer tokens costs an agent whose token is right, on ``toolsel mcp --transport http``.

    TOOLSEL_MCP_BEARER=acme.bot:SECRET python scripts/mcp_token_flood.py http://127.0.0.1:18765/mcp 1000 raw
        the flood writes one prebuilt request per raw connection, so the server gets them all within about a
        second; the agent times tools/list in a process of its own
    TOOLSEL_MCP_BEARER=acme.bot:SECRET python scripts/mcp_token_flood.py http://127.0.0.1:18765/mcp 1000 httpx
        the audit's way: httpx sends the flood, and the agent times tools/list on the same event loop, so on a
        loaded machine its times also count the client's own work on the flood

Each wrong token names the agent's identity with a random secret. Prints the agent's times (ms) before and during
the flood, and what the flood was answered (docs/results.md, "MCP over HTTP under a flood of wrong bearer
tokens").
"""

import asyncio
import json
import os
import secrets
import statistics
import sys
import time
from urllib.parse import urlsplit

import httpx

BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
Codes = list[int | str]


def wrong_token(token: str) -> str:
    return f"{token.partition(':')[0]}:{secrets.token_urlsafe(32)}"


async def agent(url: str, token: str, times: int, label: str) -> None:
    """tools/list with the right token, ``times`` times 0.3 s apart."""
    took, codes = [], set()
    async with httpx.AsyncClient(timeout=300) as client:
        for _ in range(times):
            start = time.perf_counter()
            answer = await client.post(url, json=BODY, headers=HEADERS | {"Authorization": f"Bearer {token}"})
            took.append(round((time.perf_counter() - start) * 1000))
            codes.add(answer.status_code)
            await asyncio.sleep(0.3)
    print(f"{label}: tools/list ms {took} median={statistics.median(took)} status={codes}", flush=True)


async def raw(url: str, token: str, codes: Codes) -> None:
    """One wrong-token request on a connection of its own, written whole."""
    parts = urlsplit(url)
    body = json.dumps(BODY).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
    request = (
        f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{head}Authorization: Bearer {wrong_token(token)}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    try:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        writer.write(request)
        status = (await reader.readline()).split()[1].decode()
        await reader.read()
        writer.close()
        codes.append(int(status))
    except (OSError, IndexError) as error:
        codes.append(type(error).__name__)


async def pooled(client: httpx.AsyncClient, url: str, token: str, codes: Codes) -> None:
    try:
        answer = await client.post(url, json=BODY, headers=HEADERS | {"Authorization": f"Bearer {wrong_token(token)}"})
        codes.append(answer.status_code)
    except httpx.HTTPError as error:
        codes.append(type(error).__name__)


async def main(url: str, token: str, count: int, mode: str) -> None:
    await agent(url, token, 5, "before")
    codes: Codes = []
    start = time.perf_counter()
    if mode == "raw":
        own = await asyncio.create_subprocess_exec(sys.executable, __file__, url, str(count), "agent")
        await asyncio.gather(*(raw(url, token, codes) for _ in range(count)))
        await own.wait()
    else:
        async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=400)) as client:
            flood = asyncio.gather(*(pooled(client, url, token, codes) for _ in range(count)))
            await asyncio.sleep(1)
            await agent(url, token, 8, f"during {count} wrong tokens, on the flood's event loop")
            await flood
    answered = {code: codes.count(code) for code in set(codes)}
    print(f"{count} wrong tokens answered {answered} in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    bearer = os.environ["TOOLSEL_MCP_BEARER"]
    if sys.argv[3:4] == ["agent"]:
        time.sleep(0.5)
        asyncio.run(agent(sys.argv[1], bearer, 8, f"during {sys.argv[2]} wrong tokens, in a process of its own"))
    else:
        asyncio.run(main(sys.argv[1], bearer, int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "raw"))
