"""toolsel as the gateway of the tools it finds: a found tool whose plugin declares an MCP server
(``toolsel.contracts.execution``) is called through ``toolsel mcp`` on that server, with the MCP SDK's own client
and a time limit, and every such call is reported to the learner as the outcome of the selection that offered
the tool to the caller (``Toolshed.selection_for``): success, error and latency, without the agent reporting
anything.

A declaration is its tenant's word, so the gateway starts only the commands and reaches only the URLs the
operator allows (``TOOLSEL_GATEWAY_COMMANDS``, ``TOOLSEL_GATEWAY_URLS``), and the credentials a server needs are
the operator's settings (``TOOLSEL_GATEWAY_SECRETS``), never part of what agents read. Each identity has a few
calls in flight at once (``TOOLSEL_GATEWAY_CALLS_PER_IDENTITY``) and gets answers up to a size
(``TOOLSEL_GATEWAY_RESULT_MAX_BYTES``)."""

import copy
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
from toolsel.contracts.execution import HttpServer, StdioServer, dot_segments, mcp_server
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
    (``https://mcp.example.com`` does not admit ``https://mcp.example.com.evil.net``). Paths are compared as httpx
    sends them and a server reads them (normalised, percent-decoded); a URL with dot segments in any form
    (``dot_segments``), or one httpx cannot send, is never allowed."""
    try:
        given, written = httpx2.URL(url), urlsplit(url).path
        bases = [httpx2.URL(prefix) for prefix in allowed]
    except (httpx2.InvalidURL, ValueError):
        return False
    if dot_segments(written):
        return False
    for base in bases:
        same_origin = (given.scheme, given.host, given.port) == (base.scheme, base.host, base.port)
        path = base.path.rstrip("/")
        if same_origin and (given.path == path or given.path.startswith(f"{path}/") or not path):
            return True
    return False


def failure_text(failure: BaseException) -> str:
    """``Type: message`` of what went wrong. The MCP SDK's task groups wrap the real failure in exception groups
    ("unhandled errors in a TaskGroup"), which name no cause, so a group reads as its members'."""
    if isinstance(failure, BaseExceptionGroup):
        return "; ".join(failure_text(member) for member in failure.exceptions)
    message = str(failure)
    return f"{type(failure).__name__}: {message}" if message else type(failure).__name__


def result_fault(result: CallToolResult, max_bytes: int) -> str | None:
    """Why the tool's answer is a failure (larger than the gateway passes back, or an error the tool returned), or
    None when it is not."""
    size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
    if size > max_bytes:
        return (
            f"the tool's answer is {size} bytes, more than the gateway passes back "
            f"({max_bytes} bytes, TOOLSEL_GATEWAY_RESULT_MAX_BYTES)"
        )
    if result.is_error:
        return " ".join(getattr(block, "text", "") for block in result.content) or "the tool failed"
    return None


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
    """Which declared servers may be reached, and the call itself, for one identity (``for_identity``: another)."""

    def __init__(self, settings: Settings):
        self.timeout_s = settings.gateway_timeout_s
        self.commands = [list(command) for command in settings.gateway_commands]
        self.urls = list(settings.gateway_urls)
        self.secrets = with_credential(settings.gateway_secrets, settings.plugin_secrets)
        self.result_max_bytes = settings.gateway_result_max_bytes
        self.calls_per_identity = settings.gateway_calls_per_identity
        self.slots = anyio.Semaphore(self.calls_per_identity)
        """The calls this identity may have in flight; more wait (``TOOLSEL_GATEWAY_CALLS_PER_IDENTITY`` says why)."""

    def for_identity(self) -> "Gateway":
        """The same rules with slots of their own, for another identity: over HTTP one process serves every
        identity, and one identity's calls must not hold the slots of all."""
        own = copy.copy(self)
        own.slots = anyio.Semaphore(self.calls_per_identity)
        return own

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
        """Call the tool on its server within ``timeout_s`` once one of the identity's slots is free: its result (an
        error result when the server failed, hung, answered what is not MCP or more than ``result_max_bytes``) and
        the call as an outcome reports it. The time limit and the latency start with the slot, so that they are the
        tool's own and not the wait behind the identity's other calls."""
        async with self.slots:
            started = time.monotonic()
            try:
                with anyio.fail_after(self.timeout_s):
                    result = await self._answer(proxied, arguments)
                error = result_fault(result, self.result_max_bytes)
            except TimeoutError:
                error = f"no answer from the tool's MCP server within {self.timeout_s:g} s"
            except Exception as failure:
                error = f"the tool's MCP server failed: {failure_text(failure)}"
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
        self._offered_to: dict[str, set[str]] = {}
        """Per tool, the sessions it was offered to, expired ones too (two at most: past one, which of them a call
        is cannot be told)."""

    def add(self, found: Iterable[Proxied], session_id: str | None = None) -> None:
        """Serve these tools (each now bound to its latest selection), found in this session."""
        before = sorted(self._tools)
        for proxied in found:
            self._tools.pop(proxied.listed.name, None)
            self._tools[proxied.listed.name] = proxied
            if session_id is not None:
                offered = self._offered_to.setdefault(proxied.listed.name, set())
                if len(offered) < 2:
                    offered.add(session_id)
        while len(self._tools) > self.limit:
            name, _ = self._tools.popitem(last=False)
            self._offered_to.pop(name, None)
        if sorted(self._tools) != before:
            self.version += 1

    def offered_to(self, name: str) -> frozenset[str]:
        """The sessions the tool known as ``name`` was offered to (at most two: one, or more than one)."""
        return frozenset(self._offered_to.get(name, ()))

    def get(self, name: str) -> Proxied | None:
        return self._tools.get(name)

    def listed(self) -> list[Tool]:
        return [proxied.listed for proxied in self._tools.values()]
