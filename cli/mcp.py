"""``toolsel mcp``: serve the toolshed (search_tools, review_tools, report_outcome) to MCP clients, over stdio
(what a desktop client launches) or streamable HTTP. It connects to the stack like an agent: TOOLSEL_NATS_URL,
else the ``toolsel up`` running in TOOLSEL_HOME."""

from typing import Annotated

import typer

from cli.running import run
from toolsel.client import ToolselClient
from toolsel.embedded import EmbeddedError
from toolsel.mcp.server import Transport, create_server, serve
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import Toolshed
from toolsel.render import console

app = typer.Typer()


@app.command()
def mcp(
    transport: Annotated[str, typer.Option(help="stdio, or http (streamable HTTP at /mcp)")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port")] = 8765,
    tenant: Annotated[str, typer.Option(help="tenant whose tools the agents see")] = "default",
    user: Annotated[str | None, typer.Option(help="user id the selections are made for")] = None,
    max_sessions: Annotated[
        int, typer.Option(min=1, envvar="TOOLSEL_MCP_MAX_SESSIONS", help="sessions kept (least recent go first)")
    ] = 1000,
    session_ttl_s: Annotated[
        float, typer.Option(min=1, envvar="TOOLSEL_MCP_SESSION_TTL_S", help="idle seconds before a session ends")
    ] = 3600.0,
) -> None:
    """Serve toolsel's discovery tool and review to MCP clients."""
    if transport not in ("stdio", "http"):
        raise typer.BadParameter("stdio or http", param_hint="--transport")
    chosen: Transport = "stdio" if transport == "stdio" else "http"

    async def main() -> None:
        async with ToolselClient() as client:
            toolshed = Toolshed(client, Sessions(max_sessions, session_ttl_s), tenant_id=tenant, user_id=user)
            await serve(create_server(toolshed), chosen, host, port)

    try:
        run(main)
    except EmbeddedError as error:
        console.print(f"[red]{error}[/]")
        raise typer.Exit(2) from error
