"""The MCP server (official MCP Python SDK): registers the toolshed's three tools and serves them over stdio
or streamable HTTP. The caller owns the connected client, so one NATS connection serves every MCP session."""

import functools
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolListChangedNotification
from mcp.types import Tool as MCPTool
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import Field
from starlette.applications import Starlette
from starlette.authentication import AuthenticationBackend, AuthenticationError
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsel import __version__
from toolsel.client import ToolselError
from toolsel.contracts import ErrorCode, PinList
from toolsel.contracts.common import Identifier
from toolsel.contracts.pins import PinAction
from toolsel.contracts.selection import Page, Query
from toolsel.heap import freeze_start_up_heap
from toolsel.mcp.stdio import run_stdio
from toolsel.mcp.token_checks import TokenRefused
from toolsel.mcp.toolshed import (
    SESSION_META,
    Call,
    OutcomeResult,
    Review,
    ReviewResult,
    SearchResult,
    Toolshed,
    ToolshedError,
)

Transport = Literal["stdio", "http"]
INSTRUCTIONS = (
    "Find the tools you need with search_tools: describe what you want to do. You get tools you can call, how to "
    "use them and workflow guidance. Search again (page=2, 3, ...) for further options. Afterwards tell "
    "review_tools how the tools fit (or none_of_these=true), and report_outcome how the calls went: both improve "
    "what the next agent is offered."
)
MAX_LIMIT = 20
IDENTITY_REQUIRED = (
    "send the bearer token of a toolsel identity (Authorization: Bearer <tenant>.<name>:<secret>, as "
    "`toolsel identity create` prints it); toolsel runs no OAuth authorization server"
)
"""What a request to ``/mcp`` without a valid token is told (HTTP 401)."""


class GatewayServer(MCPServer):
    """The MCP server whose ``tools/list`` holds, beside the discovery tools, the found tools the caller's toolshed
    calls on their own MCP servers (``toolsel.mcp.gateway``), and whose ``tools/call`` proxies them."""

    def __init__(self, shed: Callable[[], Toolshed], **options: Any):
        super().__init__(**options)
        self.shed = shed
        # every transport (stdio, streamable HTTP, the SDK's in-memory client) takes the handshake's capabilities
        # from this, without options: they said tools.listChanged false, and a client that heeds them never
        # looked for the tools a search makes callable
        lowlevel = self._lowlevel_server
        lowlevel.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            lowlevel.create_initialization_options, NotificationOptions(tools_changed=True)
        )

    async def list_tools(self) -> list[MCPTool]:
        return [*await super().list_tools(), *self.shed().callable.listed()]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        meta = None if context is None else context.request_context.meta
        session = (meta or {}).get(SESSION_META)
        proxied = await self.shed().call(name, arguments, session if isinstance(session, str) else None)
        return proxied if proxied is not None else await super().call_tool(name, arguments, context)


async def tools_changed(context: Context[Any, Any]) -> None:
    """Tell the client that ``tools/list`` changed. Under the initialize handshake's protocols: on the stream of
    the request that changed it, which stateless HTTP (``http_app``) has, unlike a connection's own stream; under
    the 2026-07-28 protocol, which allows it nowhere else: to the ``subscriptions/listen`` streams."""
    request = context.request_context
    if request.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        await request.session.send_notification(ToolListChangedNotification(), related_request_id=request.request_id)
    await context.notify_tools_changed()


def create_server(
    toolshed: Toolshed | Callable[[], Toolshed],
    verifier: TokenVerifier | None = None,
    url: str = "",
    *,
    pins: bool = False,
) -> MCPServer:
    """An MCP server whose tools answer from this toolshed, or from the one the function picks for the caller
    (``toolsel.mcp.tenants.PerIdentity``); with a ``verifier`` of bearer tokens every HTTP request must carry one
    it accepts (``url``: where the server is reached, which the SDK's settings need, though no OAuth metadata is
    served: ``http_app``). With ``pins`` it also serves ``pin_tool``, by which the agent changes its tenant's
    pins: off unless asked, since it changes every answer of the tenant and costs every agent the tokens of one
    more tool."""
    shed = toolshed if callable(toolshed) else lambda: toolshed
    auth = AuthSettings(issuer_url=url, resource_server_url=None) if verifier is not None else None  # type: ignore[arg-type]
    server = GatewayServer(
        shed, name="toolsel", instructions=INSTRUCTIONS, version=__version__, token_verifier=verifier, auth=auth
    )

    @server.tool()
    async def search_tools(
        query: Annotated[Query, Field(description="What do you need to do?")],
        limit: Annotated[
            int | None,
            Field(ge=1, le=MAX_LIMIT, description="How many tools at most; leave out for as many as the request needs"),
        ] = None,
        page: Annotated[
            int, Field(ge=1, le=50, description="2, 3, ...: further options for the same query (an offset of limit)")
        ] = 1,
        session: Annotated[
            Identifier | Literal[""] | None, Field(description="The session id of earlier answers")
        ] = None,  # "" as leaving it out: agents fill in optional fields
        explore: Annotated[
            bool, Field(description="false: no slot for a tool that is there to be tried, only the expected best")
        ] = True,
        app_page: Annotated[
            Page, Field(description="Where the user is in your application, e.g. /travel/booking")
        ] = "",
        tier: Annotated[
            Identifier | None, Field(description="The user's plan (free, pro, ...), unless your identity has one")
        ] = None,
        user: Annotated[
            Identifier | None, Field(description="The user you act for, unless your identity has one")
        ] = None,
        *,
        context: Context[Any, Any],
    ) -> SearchResult:
        """Search for tools by what you need to do. Returns tools you can call (with their input schema, a usage
        hint and related tools), workflow hints for their categories, and a session id to pass back. Tools marked
        callable are added to this server's tools: call them by name."""
        toolshed = shed()
        listed = toolshed.callable.version
        try:
            found = await toolshed.search(query, limit, page, session, explore, app_page=app_page, tier=tier, user=user)
        except (ToolselError, ToolshedError, ValueError) as error:
            raise ToolError(str(error)) from error
        if toolshed.callable.version != listed:
            await tools_changed(context)
        return found

    @server.tool()
    async def review_tools(
        session: Annotated[Identifier, Field(description="The session id search_tools returned")],
        reviews: Annotated[list[Review], Field(max_length=200)] = [],  # noqa: B006 (a schema default, never mutated)
        none_of_these: Annotated[
            bool, Field(description="None of the last answer's tools fit: they are all marked unrelated")
        ] = False,
    ) -> ReviewResult:
        """Say how the offered tools fit your need: perfect, related, unrelated or broken; or none_of_these.
        Tools you mark unrelated or broken are not offered again in this session."""
        try:
            return await shed().review(session, reviews, none_of_these)
        except (ToolselError, ToolshedError, ValueError) as error:
            raise ToolError(str(error)) from error

    @server.tool()
    async def report_outcome(
        session: Annotated[Identifier, Field(description="The session id search_tools returned")],
        calls: Annotated[list[Call], Field(min_length=1, max_length=200)],
    ) -> OutcomeResult:
        """Optional: report the calls you made to offered tools and whether they worked."""
        try:
            return await shed().report(session, calls)
        except (ToolselError, ToolshedError, ValueError) as error:
            raise ToolError(str(error)) from error

    if pins:

        @server.tool()
        async def pin_tool(
            action: Annotated[
                PinAction,
                Field(
                    description="pin: the tool joins every answer of your tenant; unpin: a tool its plugin pins no "
                    "longer does (it stays findable); clear: back to what its plugin declares; list: change nothing"
                ),
            ],
            tool: Annotated[
                str | None,
                Field(max_length=300, description="The tool as plugin/name (search_tools gives it as `tool`)"),
            ] = None,
        ) -> PinList:
            """Change which tools join every answer of your tenant on their own, or list them. Use it when the user
            asks to always (or no longer) be offered a tool."""
            try:
                return await shed().pins(action, tool)
            except (ToolselError, ToolshedError, ValueError) as error:
                raise ToolError(str(error)) from error

    return server


async def serve(
    server: MCPServer,
    transport: Transport,
    host: str = "127.0.0.1",
    port: int = 8765,
    trusted_proxies: Sequence[str] = (),
) -> None:
    """Serve until the client closes stdio (every line answered, see ``toolsel.mcp.stdio``), or until stopped
    (HTTP, at ``http://host:port/mcp``). What start-up made (the SDK, the client, pydantic's models: over a hundred
    thousand containers) is frozen first, so that no full garbage collection walks it while an agent waits."""
    freeze_start_up_heap()
    if transport == "stdio":
        await run_stdio(server)
    else:
        config = uvicorn.Config(
            http_app(server, host),
            host=host,
            port=port,
            log_level=server.settings.log_level.lower(),
            **forwarded_options(trusted_proxies),
        )
        await uvicorn.Server(config).serve()


def forwarded_options(trusted_proxies: Sequence[str]) -> dict[str, Any]:
    """uvicorn's options that believe forwarded headers from ``trusted_proxies`` only: its default believes any
    from 127.0.0.1, so a caller on this machine would name a new address of its own to the count of wrong tokens
    at each guess."""
    return {"proxy_headers": bool(trusted_proxies), "forwarded_allow_ips": list(trusted_proxies) or None}


def http_app(server: MCPServer, host: str) -> Starlette:
    """Streamable HTTP at ``/mcp``, stateless: each request carries its identity's bearer token, and toolsel keeps
    its sessions per identity (its tools' ``session``), so the SDK keeps no transport sessions, whose one pool for
    every identity (10,000) one identity could fill and shut the others out. What goes with them toolsel does not
    use: requests from server to client, a stream of the connection's own, resuming a stream. A request without a
    valid token is refused by ``IdentityRequired``. A verifier that is also starlette's authentication backend
    (``toolsel.mcp.tenants.IdentityTokens``) takes the place of the SDK's backend, which tells it only the token:
    it counts wrong tokens per client address, and a token it leaves unchecked is refused by ``token_refused``."""
    app = server.streamable_http_app(host=host, stateless_http=True)
    routes = app.router.routes
    for at, route in enumerate(routes):
        if isinstance(route, Route) and isinstance(route.endpoint, RequireAuthMiddleware):
            routes[at] = Route(route.path, endpoint=IdentityRequired(route.endpoint.app))
    for middleware in app.user_middleware:
        backend = middleware.kwargs.get("backend")
        if isinstance(backend, BearerAuthBackend) and isinstance(backend.token_verifier, AuthenticationBackend):
            middleware.kwargs.update(backend=backend.token_verifier, on_error=token_refused)
    return app


def token_refused(conn: HTTPConnection, error: AuthenticationError) -> Response:
    """A token left unchecked (``TokenRefused``): HTTP 429 or 503, saying why and when to retry."""
    if not isinstance(error, TokenRefused):
        return AuthenticationMiddleware.default_on_error(conn, error)
    code = ErrorCode.RATE_LIMITED if error.status == 429 else ErrorCode.UNAVAILABLE
    body = {"error": code.value, "error_description": str(error)}
    return JSONResponse(body, status_code=error.status, headers={"Retry-After": str(error.retry_after_s)})


class IdentityRequired:
    """``/mcp`` for the holders of an identity's bearer token. Any other request gets HTTP 401 saying which token
    toolsel takes, and names no authorization server: toolsel runs none, and the SDK's refusal named the MCP
    server itself, so a host following MCP's OAuth discovery failed without learning what to send."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        challenge = f'Bearer error="invalid_token", error_description="{IDENTITY_REQUIRED}"'
        body = {"error": "invalid_token", "error_description": IDENTITY_REQUIRED}
        await JSONResponse(body, status_code=401, headers={"WWW-Authenticate": challenge})(scope, receive, send)
