"""A real MCP server (the official SDK) for the gateway's tests: one tool that works, and one that fails, one that
hangs and one that answers what is not MCP; one that answers as many bytes as asked, and one that counts the calls in
flight. ``python upstream_mcp.py`` serves stdio; ``--port N`` streamable HTTP. ``forecast`` works only with the
credential the gateway must pass (WEATHER_KEY in its environment over stdio, the ``X-Weather-Key`` header over
HTTP)."""

import os
import sys
from collections import Counter

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

KEY = "k-123"
server = MCPServer("weather")


def credential(context: Context) -> str | None:
    request = context.request_context.request
    headers = getattr(request, "headers", None)
    return os.environ.get("WEATHER_KEY") if headers is None else headers.get("x-weather-key")


@server.tool()
def forecast(city: str, context: Context) -> str:
    """The weather forecast for a city."""
    if credential(context) != KEY:
        raise ToolError("no valid weather key")
    return f"sunny in {city}"


@server.tool()
def flaky(city: str) -> str:
    """Fails: the weather service is down."""
    raise ToolError("weather service down")


@server.tool()
async def stall(city: str) -> str:
    """Never answers."""
    await anyio.sleep(3600)
    return "too late"


@server.tool()
def scramble(city: str) -> str:
    """Writes what is not JSON-RPC where the answer should go, then ends."""
    os.write(1, b"\x00garbage, not JSON-RPC\n{{{\n")
    os._exit(0)


@server.tool()
def bulky(size: int) -> str:
    """Answers ``size`` bytes."""
    return "x" * size


in_flight: Counter[str] = Counter()


@server.tool()
async def crowd(caller: str) -> list[int]:
    """Answers after a second with how many calls were in flight as it began: ``caller``'s and all (over HTTP, where
    one process serves every call)."""
    in_flight[caller] += 1
    seen = [in_flight[caller], in_flight.total()]
    try:
        await anyio.sleep(1)
    finally:
        in_flight[caller] -= 1
    return seen


if __name__ == "__main__":
    if "--port" in sys.argv:
        server.run("streamable-http", port=int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        server.run()
