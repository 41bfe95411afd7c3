"""How a tool is executed, where its plugin says: for ``execution_type: "mcp"`` the MCP server that serves it, so
that toolsel's MCP gateway (``toolsel mcp``) can call it for the agent that found it. Credentials never travel
here: the gateway holds them (``TOOLSEL_GATEWAY_SECRETS``)."""

import re
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from toolsel.contracts.common import Storable

Argument = Annotated[str, StringConstraints(min_length=1, max_length=1024), Storable]
ServerToolName = Annotated[str, StringConstraints(min_length=1, max_length=128), Storable]


class StdioServer(BaseModel):
    """An MCP server the gateway starts as a process and talks to over its stdin and stdout."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    transport: Literal["stdio"]
    command: list[Argument] = Field(min_length=1, max_length=64)
    """The program and its arguments (no shell)."""
    tool: ServerToolName
    """The tool's name on that server."""


def dot_segments(path: str) -> bool:
    """Whether a URL path has ``.`` or ``..`` segments, plain or percent-encoded (``%2e``, ``%2f``, decoded until
    nothing changes) or between backslashes. HTTP clients, servers and proxies each resolve some of these, so such
    a path can reach past the one the operator's allow-list (``TOOLSEL_GATEWAY_URLS``) read in it."""
    decoded = path
    while (once := unquote(decoded)) != decoded:
        decoded = once
    return any(segment in (".", "..") for segment in re.split(r"[/\\]", decoded))


def _no_dot_segments(url: str) -> str:
    if dot_segments(urlsplit(url).path):
        raise PydanticCustomError(
            "url_dot_segments", "the path may not have . or .. segments, plain or percent-encoded"
        )
    return url


class HttpServer(BaseModel):
    """An MCP server reached over streamable HTTP."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    transport: Literal["http"]
    url: Annotated[
        str,
        StringConstraints(pattern=r"^https?://[^\s/]+(/\S*)?$", max_length=2048),
        AfterValidator(_no_dot_segments),
    ]
    """Where the server is. Its path has no dot segments (``dot_segments``), so that the path the gateway's
    allow-list reads is the one the request goes to."""
    tool: ServerToolName


McpServer = Annotated[StdioServer | HttpServer, Field(discriminator="transport")]
MCP_SERVER: TypeAdapter[StdioServer | HttpServer] = TypeAdapter(McpServer)


def mcp_server(execution_config: dict[str, Any]) -> StdioServer | HttpServer:
    """The MCP server an ``mcp`` tool declares; a declaration that is not one is refused with the path of its
    fault (``execution_config.command``, ...)."""
    try:
        return MCP_SERVER.validate_python(execution_config)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"] if part not in ("stdio", "http"))
        raise ValueError(
            f"execution_config{'.' + where if where else ''}: {first['msg']} (an mcp tool declares "
            '{"transport": "stdio", "command": [...], "tool": ...} or {"transport": "http", "url": ..., "tool": ...})'
        ) from None
