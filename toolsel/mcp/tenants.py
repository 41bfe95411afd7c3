"""MCP over HTTP serves many tenants' identities at once: each request carries its identity's bearer token
(``toolsel identity create``), and is served from that identity's own toolshed: its own sessions, its selections
made and reported under its own scope on the operator's connection, for its tenant (and user, role and tier)."""

import asyncio

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.requests import HTTPConnection

from toolsel.client import ToolselClient
from toolsel.identities import Identity, Verifier
from toolsel.mcp.gateway import Gateway
from toolsel.mcp.sessions import SessionPool, Sessions
from toolsel.mcp.token_checks import TokenChecks
from toolsel.mcp.toolshed import Toolshed, ToolshedError
from toolsel.settings import Settings
from toolsel.throttle import Throttle


class IdentityTokens(TokenVerifier, AuthenticationBackend):
    """Accepts the bearer token of an identity that is not revoked: remembered once verified, else checked with
    bcrypt off the event loop, wrong tokens counted per client address (``toolsel.mcp.token_checks``)."""

    def __init__(self, settings: Settings):
        self.verifier = Verifier(settings.home)
        throttle = Throttle(settings.mcp_token_failures, settings.mcp_token_failure_window_s, "wrong bearer tokens")
        self.checks = TokenChecks(
            self.verifier, throttle, settings.mcp_token_check_threads, settings.mcp_token_checks_waiting
        )

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        """Starlette's entry, which ``toolsel.mcp.server.http_app`` puts in the place of the SDK's: it knows the
        client's address. ``TokenRefused`` for a token left unchecked."""
        scheme, _, token = conn.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        identity = await self.checks.identity(token, conn.client.host if conn.client is not None else "")
        if identity is None:
            return None
        return AuthCredentials([]), AuthenticatedUser(_access(token, identity))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's entry, which knows no client address: every caller counts as the same one."""
        identity = await self.checks.identity(token, "")
        return None if identity is None else _access(token, identity)


def _access(token: str, identity: Identity) -> AccessToken:
    return AccessToken(token=token, client_id=identity.scope.user, scopes=[])


class PerIdentity:
    """Picks the toolshed of the identity whose token the current request carries (each calls through the gateway
    with slots of its own, ``Gateway.for_identity``). Several agents may share an identity, so each toolshed is
    ``shared``."""

    def __init__(
        self,
        client: ToolselClient,
        tokens: IdentityTokens,
        settings: Settings,
        session_ttl_s: float,
        gateway: Gateway | None = None,
    ):
        self.client, self.tokens, self.gateway = client, tokens, gateway
        self.max_sessions, self.max_offers = settings.mcp_max_sessions, settings.mcp_session_offers
        self.session_ttl_s = session_ttl_s
        self.pool = SessionPool(settings.mcp_max_sessions_total)
        """Every identity's sessions, bounded together (``mcp_max_sessions_total``)."""
        self.sheds: dict[Identity, Toolshed] = {}

    async def settled(self, timeout_s: float) -> None:
        """Every identity's outcome reports still being sent, waited for together (``Toolshed.settled``)."""
        await asyncio.gather(*(shed.settled(timeout_s) for shed in self.sheds.values()))

    def __call__(self) -> Toolshed:
        token = get_access_token()
        identity = None if token is None else self.tokens.verifier.remembered(token.token)
        if identity is None:  # the middleware refuses such requests first; revoked since: refused here
            raise ToolshedError("no valid bearer token")
        if identity not in self.sheds:
            self.sheds[identity] = Toolshed(
                self.client.acting_as(identity.scope),
                Sessions(self.max_sessions, self.session_ttl_s, self.max_offers, pool=self.pool),
                user_id=identity.user_id,
                tier=identity.tier,
                role=identity.role,
                gateway=None if self.gateway is None else self.gateway.for_identity(),
                shared=True,
            )
        return self.sheds[identity]
