"""MCP over HTTP serves many tenants' identities at once: each request carries its identity's bearer token
(``toolsel identity create``), and is served from that identity's own toolshed: its own sessions, its selections
made and reported under its own scope on the operator's connection, for its tenant (and user, role and tier)."""

import asyncio
from pathlib import Path

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier

from toolsel.client import ToolselClient
from toolsel.identities import Identity, Verifier
from toolsel.mcp.gateway import Gateway
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import Toolshed, ToolshedError


class IdentityTokens(TokenVerifier):
    """Accepts the bearer token of an identity that is not revoked (bcrypt, off the event loop, once per token)."""

    def __init__(self, home: Path):
        self.verifier = Verifier(home)

    async def verify_token(self, token: str) -> AccessToken | None:
        identity = await asyncio.to_thread(self.verifier.verify, token)
        if identity is None:
            return None
        return AccessToken(token=token, client_id=identity.scope.user, scopes=[])


class PerIdentity:
    """Picks the toolshed of the identity whose token the current request carries (each calls through the gateway
    with slots of its own, ``Gateway.for_identity``). Several agents may share an identity, so each toolshed is
    ``shared``."""

    def __init__(
        self,
        client: ToolselClient,
        tokens: IdentityTokens,
        max_sessions: int,
        session_ttl_s: float,
        gateway: Gateway | None = None,
    ):
        self.client, self.tokens, self.gateway = client, tokens, gateway
        self.max_sessions, self.session_ttl_s = max_sessions, session_ttl_s
        self.sheds: dict[Identity, Toolshed] = {}

    async def settled(self, timeout_s: float) -> None:
        """Every identity's outcome reports still being sent, waited for together (``Toolshed.settled``)."""
        await asyncio.gather(*(shed.settled(timeout_s) for shed in self.sheds.values()))

    def __call__(self) -> Toolshed:
        token = get_access_token()
        identity = None if token is None else self.tokens.verifier.verify(token.token)
        if identity is None:  # the middleware refuses such requests first; revoked since: refused here
            raise ToolshedError("no valid bearer token")
        if identity not in self.sheds:
            self.sheds[identity] = Toolshed(
                self.client.acting_as(identity.scope),
                Sessions(self.max_sessions, self.session_ttl_s),
                user_id=identity.user_id,
                tier=identity.tier,
                role=identity.role,
                gateway=None if self.gateway is None else self.gateway.for_identity(),
                shared=True,
            )
        return self.sheds[identity]
