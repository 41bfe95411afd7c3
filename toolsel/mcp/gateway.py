"""toolsel as the gateway of the tools it finds: a found tool whose plugin declares an MCP server
(``toolsel.contracts.execution``) is called through ``toolsel mcp`` on that server, with the MCP SDK's own client
and a time limit, and every such call is reported to the learner as the outcome of the selection that offered
the tool: success, error and latency, without the agent reporting anything.

A declaration is its tenant's word, so the gateway starts only the commands and reaches only the URLs the
operator allows (``TOOLSEL_GATEWAY_COMMANDS``, ``TOOLSEL_GATEWAY_URLS``), and the credentials a server needs are
the operator's settings (``TOOLSEL_GATEWAY_SECRETS``), never part of what agents read."""

import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent, Tool

from toolsel.contracts import ScoredTool, ToolCall, ToolRef
from toolsel.contracts.execution import HttpServer, StdioServer, mcp_server
from toolsel.settings import Settings
from toolsel.tool_shapes import description, function_name, parameters_schema

log = logging.getLogger(__name__)
MAX_ERROR = 2000
"""What an outcome keeps of an error's text (``ToolCall.error``)."""
MAX_CALLABLE = 100
"""Found tools a toolshed keeps callable at once (the least recently found go first)."""


@dataclass(frozen=True)
class Proxied:
    """A found tool the gateway can call: what ``tools/list`` shows, and where and for which selection."""

    ref: ToolRef
    selection_id: UUID
    server: StdioServer | HttpServer
    listed: Tool


def url_allowed(url: str, allowed: Iterable[str]) -> bool:
    """``url`` is under one of the ``allowed`` URLs: the same scheme, host and port, and a path below its path
    (``https://mcp.example.com`` does not admit ``https://mcp.example.com.evil.net``)."""
    given = urlsplit(url)
    for prefix in allowed:
        base = urlsplit(prefix)
        same_origin = (given.scheme, given.hostname, given.port) == (base.scheme, base.hostname, base.port)
        path = base.path.rstrip("/")
        if same_origin and (given.path == path or given.path.startswith(f"{path}/") or not path):
            return True
    return False


def with_credential(secrets: Mapping[str, dict[str, str]], credentials: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The gateway secrets of plugins that sync only with their credential (``TOOLSEL_PLUGIN_SECRETS``). Any
    tenant may declare tools in a plugin without one, and so point them at a server the operator allows but the
    plugin's owner does not run, which would be sent the plugin's secrets: those are withheld, and said so."""
    withheld = sorted(set(secrets) - set(credentials))
    if withheld:
        log.warning(
            "gateway secrets withheld from plugins that sync without a credential (TOOLSEL_PLUGIN_SECRETS): %s",
            ", ".join(withheld),
        )
    return {plugin: dict(values) for plugin, values in secrets.items() if plugin in credentials}


class Gateway:
    """Which declared servers may be reached, and the call itself."""

    def __init__(self, settings: Settings):
        self.timeout_s = settings.gateway_timeout_s
        self.commands = [list(command) for command in settings.gateway_commands]
        self.urls = list(settings.gateway_urls)
        self.secrets = with_credential(settings.gateway_secrets, settings.plugin_secrets)

    def refusal(self, server: StdioServer | HttpServer) -> str | None:
        """Why the gateway will not call this server, or None when it may."""
        if isinstance(server, StdioServer):
            if any(server.command[: len(allowed)] == allowed for allowed in self.commands):
                return None
            return "its command is not one the operator allows (TOOLSEL_GATEWAY_COMMANDS)"
        if url_allowed(server.url, self.urls):
            return None
        return "its URL is not one the operator allows (TOOLSEL_GATEWAY_URLS)"

    def proxied(self, tool: ScoredTool, selection_id: UUID) -> Proxied | None:
        """The found tool as the gateway serves it, when its plugin declares an MCP server the gateway may call."""
        if tool.execution_type != "mcp":
            return None
        try:
            server = mcp_server(tool.execution_config)
        except ValueError:  # declared before declarations were checked at sync
            return None
        if (why := self.refusal(server)) is not None:
            log.info("%s is not callable through the gateway: %s", tool.key, why)
            return None
        listed = Tool(
            name=function_name(tool),
            description=description(tool),
            input_schema=parameters_schema(tool.parameters),
        )
        return Proxied(ToolRef(plugin_id=tool.plugin_id, name=tool.name), selection_id, server, listed)

    async def _answer(self, proxied: Proxied, arguments: dict[str, Any]) -> CallToolResult:
        """The tool's own answer, over a connection opened for this call (and closed after it)."""
        server = proxied.server
        secrets = self.secrets.get(proxied.ref.plugin_id, {})
        async with AsyncExitStack() as opened:
            if isinstance(server, StdioServer):
                program, *args = server.command
                transport: Any = StdioServerParameters(command=program, args=args, env=secrets or None)
            else:
                http = await opened.enter_async_context(httpx2.AsyncClient(headers=secrets))
                transport = streamable_http_client(server.url, http_client=http)
            upstream = await opened.enter_async_context(Client(transport))
            return await upstream.call_tool(server.tool, arguments)

    async def call(self, proxied: Proxied, arguments: dict[str, Any]) -> tuple[CallToolResult, ToolCall]:
        """Call the tool on its server within ``timeout_s``: its result (an error result when the server failed,
        hung or answered what is not MCP) and the call as an outcome reports it."""
        started = time.monotonic()
        error: str | None = None
        try:
            with anyio.fail_after(self.timeout_s):
                result = await self._answer(proxied, arguments)
            if result.is_error:
                error = " ".join(getattr(block, "text", "") for block in result.content) or "the tool failed"
        except TimeoutError:
            error = f"no answer from the tool's MCP server within {self.timeout_s:g} s"
        except Exception as failure:
            error = f"the tool's MCP server failed: {type(failure).__name__}: {failure}"
        latency_ms = (time.monotonic() - started) * 1000
        if error is not None:
            result = CallToolResult(content=[TextContent(type="text", text=error)], is_error=True)
        call = ToolCall(
            plugin_id=proxied.ref.plugin_id,
            name=proxied.ref.name,
            success=error is None,
            latency_ms=round(latency_ms, 3),
            error=None if error is None else error[:MAX_ERROR],
        )
        return result, call


class CallableTools:
    """The found tools one toolshed serves as its own (least recently found dropped past ``MAX_CALLABLE``)."""

    def __init__(self, limit: int = MAX_CALLABLE):
        self.limit = limit
        self.version = 0
        """Counts the changes of the list (a server tells its clients when it moved)."""
        self._tools: OrderedDict[str, Proxied] = OrderedDict()

    def add(self, found: Iterable[Proxied]) -> None:
        """Serve these tools (each now bound to its latest selection)."""
        before = sorted(self._tools)
        for proxied in found:
            self._tools.pop(proxied.listed.name, None)
            self._tools[proxied.listed.name] = proxied
        while len(self._tools) > self.limit:
            self._tools.popitem(last=False)
        if sorted(self._tools) != before:
            self.version += 1

    def get(self, name: str) -> Proxied | None:
        return self._tools.get(name)

    def listed(self) -> list[Tool]:
        return [proxied.listed for proxied in self._tools.values()]
