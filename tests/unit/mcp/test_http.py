"""MCP over HTTP as ``toolsel mcp --transport http`` serves it (``http_app``), in process with a stand-in for the
stack: one identity's connections take nothing from another's, a search that makes found tools callable tells
the client on its own stream (and the handshake says it will), a found tool's outcome counts for the selection of
the agent that called it when several agents share an identity, and a request without a token is told which one
to send."""

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types
import pytest
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.types.version import LATEST_MODERN_VERSION
from starlette.testclient import TestClient

from tests.unit.mcp.stack import Stack
from toolsel import identities
from toolsel.contracts import OutcomeEvent, ScoreBreakdown, ScoredTool, SelectRequest
from toolsel.mcp.gateway import Gateway
from toolsel.mcp.server import IDENTITY_REQUIRED, create_server, http_app
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.tenants import IdentityTokens, PerIdentity
from toolsel.mcp.toolshed import REPORT_WAIT_S, SESSION_META, Toolshed
from toolsel.settings import Settings

URL = "http://127.0.0.1:8765"
UPSTREAM = ["weather-server"]
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
HANDSHAKE = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
SEARCH = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "search_tools", "arguments": {"query": "weather in Rome"}},
}


def callable_forecast(request: SelectRequest) -> ScoredTool:
    """Every search finds one tool the gateway may call (its server does not exist, so each call is a failure to
    report)."""
    return ScoredTool(
        plugin_id="weather",
        name="forecast",
        description="Weather forecast for a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        score=1.0,
        confidence=0.9,
        breakdown=ScoreBreakdown(),
        execution_type="mcp",
        execution_config={"transport": "stdio", "command": UPSTREAM, "tool": "forecast"},
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Any, dict[str, str]]]:
    """The app, its MCP server and the bearer token of each of two tenants' identities."""
    bearers = {tenant: identities.create(tmp_path, tenant, "agent").bearer for tenant in ("acme", "evil")}
    tokens = IdentityTokens(Settings(home=tmp_path))
    gateway = Gateway(Settings(gateway_commands=[UPSTREAM]))
    server = create_server(
        PerIdentity(Stack(callable_forecast), tokens, Settings(mcp_max_sessions=10), 600, gateway), tokens, URL
    )  # type: ignore[arg-type]
    with TestClient(http_app(server, "127.0.0.1"), base_url=URL) as client:
        yield client, server, bearers


def test_each_identity_calls_through_gateway_slots_of_its_own(tmp_path: Path) -> None:
    """One process serves every identity: one identity's calls in flight hold none of another's slots."""
    bearers = [identities.create(tmp_path, tenant, "agent").bearer for tenant in ("acme", "evil")]
    gateway = Gateway(Settings(gateway_commands=[UPSTREAM]))
    tokens = IdentityTokens(Settings(home=tmp_path))
    for bearer in bearers:
        tokens.verifier.verify(bearer)  # as the middleware does first
    toolsheds = PerIdentity(Stack(callable_forecast), tokens, Settings(mcp_max_sessions=10), 600, gateway)  # type: ignore[arg-type]

    def slots_of(bearer: str) -> object:
        token = auth_context_var.set(AuthenticatedUser(AccessToken(token=bearer, client_id="agent", scopes=[])))
        try:
            served = toolsheds().gateway
        finally:
            auth_context_var.reset(token)
        assert served is not None
        return served.slots

    acme, evil = (slots_of(bearer) for bearer in bearers)
    assert acme is not evil
    assert slots_of(bearers[0]) is acme


def messages(answer: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer's event stream, in order."""
    return [json.loads(line[len("data: ") :]) for line in answer.text.splitlines() if line.startswith("data: ")]


def post(client: TestClient, bearer: str, message: dict[str, Any]) -> Any:
    headers = HEADERS | {"authorization": f"Bearer {bearer}", "mcp-protocol-version": HANDSHAKE}
    return client.post("/mcp", json=message, headers=headers)


def test_one_identity_opening_connections_in_a_loop_shuts_no_other_out(
    served: tuple[TestClient, Any, dict[str, str]],
) -> None:
    client, server, bearers = served
    server.session_manager.max_sessions = 3  # the SDK's pool of transport sessions (10,000), made quick to fill
    for _ in range(10):
        post(client, bearers["evil"], INITIALIZE)
    opened = post(client, bearers["acme"], INITIALIZE)
    assert opened.status_code == 200, opened.text
    assert "mcp-session-id" not in opened.headers
    searched = post(client, bearers["acme"], SEARCH)
    assert searched.status_code == 200, searched.text
    result = messages(searched)[-1]["result"]
    assert result["structuredContent"]["tools"][0]["tool"] == "weather/forecast"


def test_a_search_that_makes_a_found_tool_callable_says_so_on_its_own_stream(
    served: tuple[TestClient, Any, dict[str, str]],
) -> None:
    client, _, bearers = served
    first = messages(post(client, bearers["acme"], SEARCH))
    assert [m.get("method") for m in first] == ["notifications/tools/list_changed", None]
    assert first[-1]["result"]["structuredContent"]["tools"][0]["callable"] is True
    again = messages(post(client, bearers["acme"], SEARCH))
    assert [m.get("method") for m in again] == [None], "the same tool found again changed the list"
    other = messages(post(client, bearers["evil"], SEARCH))
    assert [m.get("method") for m in other] == ["notifications/tools/list_changed", None], "its own list"


@pytest.mark.parametrize(("mode", "told"), [("legacy", 1), (LATEST_MODERN_VERSION, 0)])
async def test_the_change_is_told_on_the_request_only_under_the_handshake_protocols(mode: str, told: int) -> None:
    """Under the 2026-07-28 protocol a change reaches only the ``subscriptions/listen`` streams that ask for it."""
    changed: list[object] = []

    async def notified(message: object) -> None:
        if isinstance(message, mcp.types.ToolListChangedNotification):
            changed.append(message)

    shed = Toolshed(Stack(callable_forecast), Sessions(10, 600), gateway=Gateway(Settings(gateway_commands=[UPSTREAM])))  # type: ignore[arg-type]
    async with Client(create_server(shed), mode=mode, message_handler=notified) as agent:
        found = await agent.call_tool("search_tools", {"query": "weather in Rome"})
    assert not found.is_error
    assert len(changed) == told


def test_the_handshake_says_the_tool_list_changes(served: tuple[TestClient, Any, dict[str, str]]) -> None:
    """The server sends notifications/tools/list_changed after a search; a client that heeds the capabilities
    listens for it only when the handshake says ``tools.listChanged``."""
    client, _, bearers = served
    opened = messages(post(client, bearers["acme"], INITIALIZE))
    assert opened[-1]["result"]["capabilities"]["tools"] == {"listChanged": True}


async def test_the_sdks_client_is_told_the_tool_list_changes() -> None:
    shed = Toolshed(Stack(callable_forecast), Sessions(10, 600))  # type: ignore[arg-type]
    async with Client(create_server(shed), mode="legacy") as agent:
        assert agent.server_capabilities.tools is not None
        assert agent.server_capabilities.tools.list_changed is True


def forecast(client: TestClient, bearer: str, session: str | None = None) -> dict[str, Any]:
    """Call the found tool, naming the caller's session in ``_meta`` when given."""
    params: dict[str, Any] = {"name": "weather__forecast", "arguments": {"city": "Rome"}}
    if session is not None:
        params["_meta"] = {SESSION_META: session}
    answer = messages(post(client, bearer, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}))
    result: dict[str, Any] = answer[-1]["result"]
    return result


def test_agents_sharing_an_identity_are_credited_only_with_their_own_calls(
    served: tuple[TestClient, Any, dict[str, str]],
) -> None:
    """Alice's and Bob's agents use one identity. A call counts for the selection of the session it names; without
    one, only while one session was offered the tool; past that it counts for no one (not for the latest search,
    which may be another agent's)."""
    client, server, bearers = served
    reported = server.shed.client.reported

    def search(user: str) -> tuple[str, str]:
        message = {**SEARCH, "params": {**SEARCH["params"], "arguments": {"query": "weather in Rome", "user": user}}}
        found = messages(post(client, bearers["acme"], message))[-1]["result"]["structuredContent"]
        return found["session"], found["selection_id"]

    alices, alices_selection = search("alice")
    assert forecast(client, bearers["acme"])["isError"]  # its server does not exist: a failure, reported
    assert [str(e.selection_id) for e in reported] == [alices_selection]  # the one session offered it
    bobs, bobs_selection = search("bob")
    forecast(client, bearers["acme"])
    assert len(reported) == 1, "a call that may be either agent's was credited to one"
    forecast(client, bearers["acme"], alices)
    forecast(client, bearers["acme"], bobs)
    forecast(client, bearers["acme"], "no-such-session")
    assert [str(e.selection_id) for e in reported[1:]] == [alices_selection, bobs_selection]
    (shed,) = server.shed.sheds.values()
    assert shed.unattributed == 2


async def test_a_call_is_not_credited_to_the_one_live_session_when_an_expired_one_was_offered_the_tool_too() -> None:
    """Bob's session idled past its limit and Alice's lives: Bob's agent, which still holds the tool list, called
    the tool with no session named, and the outcome was credited to Alice's selection."""
    now = [0.0]
    stack = Stack(callable_forecast)
    gateway = Gateway(Settings(gateway_commands=[UPSTREAM]))
    shed = Toolshed(stack, Sessions(10, 600, clock=lambda: now[0]), gateway=gateway, shared=True)  # type: ignore[arg-type]
    await shed.search("weather in Rome", user="bob")
    now[0] = 500
    alice = await shed.search("weather in Rome", user="alice")
    now[0] = 700  # Bob's session expired
    await shed.call("weather__forecast", {"city": "Rome"})
    await asyncio.gather(*shed.reports)
    assert (stack.reported, shed.unattributed) == ([], 1)
    await shed.call("weather__forecast", {"city": "Rome"}, session=alice.session)  # named: hers
    await asyncio.gather(*shed.reports)
    assert [e.selection_id for e in stack.reported] == [alice.selection_id]


class Stalled(Stack):
    """A stack that takes an outcome only once let (a NATS outage: JetStream's ack does not come)."""

    def __init__(self) -> None:
        super().__init__(callable_forecast)
        self.let = asyncio.Event()

    async def report_outcome(self, event: OutcomeEvent) -> None:
        await self.let.wait()
        await super().report_outcome(event)


async def test_a_found_tools_answer_does_not_wait_for_its_outcome_to_be_sent() -> None:
    stack = Stalled()
    shed = Toolshed(stack, Sessions(10, 600), gateway=Gateway(Settings(gateway_commands=[UPSTREAM])))  # type: ignore[arg-type]
    async with Client(create_server(shed)) as agent:
        found = await agent.call_tool("search_tools", {"query": "weather in Rome"})
        assert isinstance(found.structured_content, dict)
        with anyio.fail_after(REPORT_WAIT_S + 5):  # the stand-in's server fails at once; the ack never comes
            answer = await agent.call_tool("weather__forecast", {"city": "Rome"})
        assert answer.is_error
        assert (stack.reported, len(shed.reports)) == ([], 1)
        stack.let.set()
        await asyncio.wait(set(shed.reports))
    assert [str(e.selection_id) for e in stack.reported] == [found.structured_content["selection_id"]]
    assert not shed.reports


async def test_a_stopping_server_waits_for_the_outcomes_still_being_sent() -> None:
    """A report NATS was slow to acknowledge was dropped when the server stopped; it is waited for, within a
    bound, and a report that never goes through does not hold the stop past it."""
    stack = Stalled()
    shed = Toolshed(stack, Sessions(10, 600), gateway=Gateway(Settings(gateway_commands=[UPSTREAM])))  # type: ignore[arg-type]
    found = await shed.search("weather in Rome")
    await shed.call("weather__forecast", {"city": "Rome"})
    assert len(shed.reports) == 1
    await shed.settled(0.05)  # the ack does not come: the stop goes on
    assert (stack.reported, len(shed.reports)) == ([], 1)
    asyncio.get_running_loop().call_later(0.05, stack.let.set)
    await shed.settled(5.0)
    assert [e.selection_id for e in stack.reported] == [found.selection_id]


def test_a_request_without_a_token_is_told_which_token_to_send_and_of_no_authorization_server(
    served: tuple[TestClient, Any, dict[str, str]],
) -> None:
    """toolsel runs no OAuth authorization server: a 401 that pointed at metadata naming one sent a host following
    MCP's OAuth discovery to a server that is not there, never saying to use an identity's token."""
    client, _, bearers = served
    for bearer in (None, "acme.agent:wrong"):
        headers = HEADERS | ({"authorization": f"Bearer {bearer}"} if bearer else {})
        refused = client.post("/mcp", json=INITIALIZE, headers=headers)
        assert refused.status_code == 401
        assert refused.json() == {"error": "invalid_token", "error_description": IDENTITY_REQUIRED}
        challenge = refused.headers["www-authenticate"]
        assert "toolsel identity create" in challenge
        assert "resource_metadata" not in challenge
    for metadata in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"):
        assert client.get(metadata).status_code == 404
    assert post(client, bearers["acme"], INITIALIZE).status_code == 200
