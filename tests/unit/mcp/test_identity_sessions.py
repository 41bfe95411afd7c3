"""Sessions of MCP over HTTP (``PerIdentity``) take their bounds from the settings: answers kept per session,
sessions per identity, and sessions of all identities together, where one identity's flood ends its own
sessions; a review or outcome within the bounds still counts for the selection that offered its tool."""

from pathlib import Path

import pytest
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from tests.unit.mcp.stack import Stack
from toolsel import identities
from toolsel.contracts import ScoreBreakdown, ScoredTool, SelectRequest
from toolsel.mcp.sessions import UnknownSession
from toolsel.mcp.tenants import IdentityTokens, PerIdentity
from toolsel.mcp.toolshed import Call, Toolshed, ToolshedError
from toolsel.settings import Settings


def named_after_query(request: SelectRequest) -> ScoredTool:
    """Each search finds one tool named after its query."""
    return ScoredTool(
        plugin_id="p",
        name=request.query,
        description="A tool.",
        parameters={"type": "object"},
        score=1.0,
        breakdown=ScoreBreakdown(),
    )


def served(tmp_path: Path, **bounds: int) -> tuple[Stack, dict[str, Toolshed], PerIdentity]:
    """Each of two tenants' identities' toolshed, from one ``PerIdentity`` with these settings."""
    settings = Settings(home=tmp_path, **bounds)  # type: ignore[arg-type]
    tokens = IdentityTokens(settings)
    stack = Stack(named_after_query)
    toolsheds = PerIdentity(stack, tokens, settings, 600)  # type: ignore[arg-type]
    sheds = {}
    for tenant in ("acme", "evil"):
        bearer = identities.create(tmp_path, tenant, "agent").bearer
        tokens.verifier.verify(bearer)  # as the middleware does first
        token = auth_context_var.set(AuthenticatedUser(AccessToken(token=bearer, client_id="agent", scopes=[])))
        try:
            sheds[tenant] = toolsheds()
        finally:
            auth_context_var.reset(token)
    return stack, sheds, toolsheds


async def test_one_identitys_flood_ends_its_own_sessions_and_the_others_outcomes_still_count(tmp_path: Path) -> None:
    stack, sheds, toolsheds = served(tmp_path, mcp_max_sessions=10, mcp_max_sessions_total=4)
    mine = await sheds["acme"].search("forecast")
    flood = [await sheds["evil"].search(f"flood{i}") for i in range(10)]
    assert (len(toolsheds.pool), len(sheds["acme"].sessions), len(sheds["evil"].sessions)) == (4, 1, 3)
    assert (await sheds["acme"].report(mine.session, [Call(tool="p__forecast", success=True)])).recorded == 1
    assert [e.selection_id for e in stack.reported] == [mine.selection_id]
    with pytest.raises(UnknownSession):
        await sheds["evil"].report(flood[0].session, [Call(tool="p__flood0", success=True)])
    assert (await sheds["evil"].report(flood[-1].session, [Call(tool="p__flood9", success=True)])).recorded == 1


async def test_each_identity_keeps_its_own_sessions_up_to_its_bound(tmp_path: Path) -> None:
    _, sheds, _ = served(tmp_path, mcp_max_sessions=2)
    first, *_ = [await sheds["acme"].search(f"q{i}") for i in range(3)]
    await sheds["evil"].search("other")
    assert (len(sheds["acme"].sessions), len(sheds["evil"].sessions)) == (2, 1)
    with pytest.raises(UnknownSession):
        await sheds["acme"].report(first.session, [Call(tool="p__q0", success=True)])


async def test_a_session_keeps_its_last_answers_and_attributes_their_tools(tmp_path: Path) -> None:
    stack, sheds, _ = served(tmp_path, mcp_session_offers=2)
    shed = sheds["acme"]
    first = await shed.search("old")
    kept = [await shed.search(q, session=first.session) for q in ("middle", "new")]
    with pytest.raises(ToolshedError, match="was not offered in this session"):
        await shed.report(first.session, [Call(tool="p__old", success=True)])
    calls = [Call(tool="p__middle", success=True), Call(tool="p/new", success=False)]
    assert (await shed.report(first.session, calls)).recorded == 2
    assert [e.selection_id for e in stack.reported] == [s.selection_id for s in kept]
