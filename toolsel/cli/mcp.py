"""``toolsel mcp``: serve the toolshed (search_tools, review_tools, report_outcome) to MCP clients, over stdio
(what a desktop client launches) or streamable HTTP.

Over stdio it serves the identity it was started with: it connects to the stack like an agent
(TOOLSEL_NATS_URL, a tenant's identity from ``toolsel identity create``, else the default tenant's agent of the
``toolsel up`` running in TOOLSEL_HOME) and selects for that identity's tenant. Over HTTP every request must
carry an identity's bearer token and is served for that identity, on the operator's connection. With ``--pins``
it also serves ``pin_tool``: the agent pins and unpins tools for its tenant (``toolsel pins``)."""

from typing import Annotated

import typer

from toolsel.cli.running import USAGE, client, fail, run, settings
from toolsel.client import ToolselClient
from toolsel.contracts import DEFAULT_TENANT
from toolsel.embedded import EmbeddedError
from toolsel.mcp.gateway import Gateway
from toolsel.mcp.server import Transport, create_server, serve
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.tenants import IdentityTokens, PerIdentity
from toolsel.mcp.toolshed import Toolshed
from toolsel.render import console

app = typer.Typer()


@app.command()
def mcp(
    transport: Annotated[str, typer.Option(help="stdio, or http (streamable HTTP at /mcp)")] = "stdio",
    host: Annotated[str, typer.Option(help="HTTP address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port")] = 8765,
    tenant: Annotated[
        str | None, typer.Option(help="stdio as the operator: the tenant whose tools the agents see (default)")
    ] = None,
    user: Annotated[str | None, typer.Option(help="stdio: the user id the selections are made for")] = None,
    session_ttl_s: Annotated[
        float, typer.Option(min=1, envvar="TOOLSEL_MCP_SESSION_TTL_S", help="idle seconds before a session ends")
    ] = 3600.0,
    pins: Annotated[
        bool, typer.Option("--pins", help="also serve pin_tool, by which agents change their tenant's own pins")
    ] = False,
) -> None:
    """Serve toolsel's discovery tool and review to MCP clients."""
    if transport not in ("stdio", "http"):
        raise typer.BadParameter("stdio or http", param_hint="--transport")
    chosen: Transport = "stdio" if transport == "stdio" else "http"
    gateway = Gateway(settings())

    async def stdio() -> None:
        async with ToolselClient(stay_connected=True) as connected:
            own = connected.scope.tenant
            if own is not None and tenant not in (None, own):
                fail(f"--tenant {tenant}: this identity serves its own tenant {own} only", USAGE)
            named = None if own is not None else tenant or DEFAULT_TENANT
            sessions = Sessions(settings().mcp_max_sessions, session_ttl_s, settings().mcp_session_offers)
            toolshed = Toolshed(connected, sessions, tenant_id=named, user_id=user, gateway=gateway)
            try:
                await serve(create_server(toolshed, pins=pins), chosen)
            finally:
                await toolshed.settled(connected.timeout_s)

    async def http() -> None:
        tokens = IdentityTokens(settings())
        async with client(stay_connected=True) as operator:
            toolsheds = PerIdentity(operator, tokens, settings(), session_ttl_s, gateway)
            try:
                server = create_server(toolsheds, tokens, f"http://{host}:{port}", pins=pins)
                await serve(server, chosen, host, port, settings().mcp_trusted_proxies)
            finally:
                await toolsheds.settled(operator.timeout_s)

    main = stdio if chosen == "stdio" else http

    try:
        run(main)
    except EmbeddedError as error:
        console.print(f"[red]{error}[/]")
        raise typer.Exit(2) from error
