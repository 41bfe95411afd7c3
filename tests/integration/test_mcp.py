"""``toolsel mcp`` through the MCP SDK's own client against the embedded stack: in-process, over stdio (the
command a desktop client launches) and over streamable HTTP."""

import asyncio
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import asyncpg
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel import identities
from toolsel.client import ToolselClient
from toolsel.contracts import RegistryChanged, subjects
from toolsel.mcp.server import create_server
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import Toolshed
from toolsel.settings import Settings
from toolsel.stack import TOOLSEL_COMMAND, Stack
from toolsel.tool_shapes import NAME_PATTERN

EMAIL = "email my boss the quarterly report"


async def catalog(client: ToolselClient) -> tuple[str, str]:
    """A tenant with the five test tools; send_email carries a usage hint and a related tool."""
    tenant, plugin = unique("tenant"), unique("mail")
    tools = [
        tool("send_email", usage_hint="Put the recipients in 'query'.", related_tools=["create_event"]),
        *(tool(name) for name in ("get_weather", "search_flights", "translate_text", "create_event")),
    ]
    await sync_and_wait(client, plugin_sync(plugin, tenant, tools))
    return tenant, plugin


async def call(mcp: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await mcp.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(mcp: Client, name: str, **arguments: Any) -> str:
    result = await mcp.call_tool(name, arguments)
    assert result.is_error
    return " ".join(getattr(block, "text", "") for block in result.content)


@asynccontextmanager
async def in_process(client: ToolselClient) -> AsyncIterator[tuple[Client, str]]:
    """The SDK's client on an in-process server of a fresh tenant (a context, not a fixture: the SDK's task
    group must close in the task that opened it)."""
    tenant, plugin = await catalog(client)
    server = create_server(Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant))
    async with Client(server) as connected:
        yield connected, plugin


async def test_search_returns_tools_ready_to_call_with_their_guidance(client: ToolselClient) -> None:
    async with in_process(client) as (connected, plugin):
        await search_shows_guidance(connected, plugin)


async def test_a_search_returns_at_most_its_limit_pins_included(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("pinned")
    pins = [tool("get_weather", pinned=True), tool("translate_text", pinned=True)]
    rest = [tool(name) for name in ("send_email", "search_flights", "create_event")]
    await sync_and_wait(client, plugin_sync(plugin, tenant, [*pins, *rest]))
    server = create_server(Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant))
    async with Client(server) as connected:
        found = await call(connected, "search_tools", query=EMAIL, limit=3)
    assert [t["tool"].split("/")[1] for t in found["tools"]] == ["get_weather", "translate_text", "send_email"]


async def search_shows_guidance(connected: Client, plugin: str) -> None:
    listed = {t.name for t in (await connected.list_tools()).tools}
    assert listed == {"search_tools", "review_tools", "report_outcome"}
    found = await call(connected, "search_tools", query=EMAIL, limit=2)
    assert found["session"]
    assert not found["no_match"]
    top = found["tools"][0]
    assert top["name"] == f"{plugin}__send_email"
    assert top["tool"] == f"{plugin}/send_email"
    assert top["usage_hint"] == "Put the recipients in 'query'."
    assert top["related_tools"] == [f"{plugin}__create_event"]
    assert top["input_schema"]["type"] == "object"
    assert all(NAME_PATTERN.match(t["name"]) for t in found["tools"])
    assert found["workflow_hints"] == {f"{plugin}/general": "Pick one tool, then report the outcome."}
    assert all(0.0 <= t["confidence"] <= 1.0 for t in found["tools"])
    best = max(t["confidence"] for t in found["tools"] if t["related_to"] is None)
    assert found["no_match"] == (best < Settings().no_match_confidence)


async def test_a_session_never_offers_a_rejected_tool_and_pages_past_earlier_answers(client: ToolselClient) -> None:
    async with in_process(client) as (connected, _):
        await session_remembers(connected)


async def session_remembers(connected: Client) -> None:
    first = await call(connected, "search_tools", query=EMAIL, limit=2)
    session = first["session"]
    top = first["tools"][0]["name"]
    reviewed = await call(connected, "review_tools", session=session, reviews=[{"tool": top, "verdict": "unrelated"}])
    assert reviewed["rejected"] == [top]
    again = await call(connected, "search_tools", query=EMAIL, limit=2, session=session)
    assert again["session"] == session
    assert top not in {t["name"] for t in again["tools"]}

    page_two = await call(connected, "search_tools", query=EMAIL, limit=2, page=2, session=session)
    assert not {t["name"] for t in page_two["tools"]} & {t["name"] for t in again["tools"]}

    outcome = await call(
        connected, "report_outcome", session=session, calls=[{"tool": page_two["tools"][0]["name"], "success": True}]
    )
    assert outcome["recorded"] == 1

    # "none of these" until nothing is left: the answer then says nothing fits
    answer = page_two
    for _ in range(5):
        if answer["no_match"]:
            break
        await call(connected, "review_tools", session=session, none_of_these=True)
        answer = await call(connected, "search_tools", query=EMAIL, limit=2, session=session)
    assert answer["no_match"]
    assert all(t["confidence"] < Settings().no_match_confidence for t in answer["tools"])
    assert "No tool fits" in answer["note"]


async def test_a_page_is_an_offset_in_any_session_and_an_unknown_session_is_refused(client: ToolselClient) -> None:
    async with in_process(client) as (connected, _):
        whole = await call(connected, "search_tools", query=EMAIL, limit=4, explore=False)
        second = await call(connected, "search_tools", query=EMAIL, limit=2, page=2, explore=False)
        assert [t["tool"] for t in second["tools"]] == [t["tool"] for t in whole["tools"][2:4]]
        assert second["session"] != whole["session"]  # a fresh session: the offset alone pages
        assert "unknown or expired" in await refused(connected, "search_tools", query=EMAIL, limit=2, session="x")
        assert "only the best 50" in await refused(connected, "search_tools", query=EMAIL, limit=20, page=3)


async def test_mistakes_come_back_as_tool_errors(client: ToolselClient) -> None:
    async with in_process(client) as (connected, _):
        await mistakes_are_tool_errors(connected)


async def mistakes_are_tool_errors(connected: Client) -> None:
    assert "unknown or expired" in await refused(connected, "review_tools", session="nope", none_of_these=True)
    session = (await call(connected, "search_tools", query=EMAIL, limit=1))["session"]
    assert "not offered" in await refused(
        connected, "report_outcome", session=session, calls=[{"tool": "other__tool", "success": False}]
    )
    assert "at least one" in await refused(connected, "review_tools", session=session)
    long_name = "x" * 100_000  # a name no search gave: refused by its length, not echoed back whole
    too_long = await refused(
        connected, "review_tools", session=session, reviews=[{"tool": long_name, "verdict": "broken"}]
    )
    assert long_name not in too_long
    assert (await connected.call_tool("search_tools", {"query": "", "limit": 2})).is_error
    assert (await connected.call_tool("search_tools", {"query": EMAIL, "limit": 500})).is_error


async def test_a_call_gives_its_page_tier_and_user_where_the_identity_leaves_them_open(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = await catalog(client)
    await pool.execute(
        "INSERT INTO tool_visibility_rules (tenant_id, rule_type, effect, target_kind, target, conditions, priority)"
        " VALUES ($1, 'page', 'deny', 'tool', $2, $3, 10)",
        tenant,
        f"{plugin}/send_email",
        json.dumps({"page": "/settings*"}),
    )
    await client.nc.publish(
        subjects.REGISTRY_CHANGED, RegistryChanged(plugin_id=plugin, reason="rule").model_dump_json().encode()
    )
    open_shed = Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant)
    fixed_shed = Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant, user_id="u1", tier="pro")
    async with Client(create_server(open_shed)) as connected:

        async def hidden_on_settings() -> bool:
            found = await call(connected, "search_tools", query=EMAIL, limit=3, app_page="/settings/account")
            return f"{plugin}__send_email" not in {t["name"] for t in found["tools"]}

        assert await eventually(hidden_on_settings)
        inbox = await call(connected, "search_tools", query=EMAIL, limit=3, app_page="/inbox", tier="pro", user="u9")
        assert inbox["tools"][0]["name"] == f"{plugin}__send_email"
        assert (await connected.call_tool("search_tools", {"query": EMAIL, "limit": 2, "tier": "pro plan"})).is_error
        assert (await connected.call_tool("search_tools", {"query": EMAIL, "limit": 2, "app_page": "/" * 300})).is_error
    async with Client(create_server(fixed_shed)) as connected:
        await call(connected, "search_tools", query=EMAIL, limit=2, tier="pro", user="u1")
        assert "fixed to 'pro'" in await refused(connected, "search_tools", query=EMAIL, limit=2, tier="enterprise")
        assert "fixed to 'u1'" in await refused(connected, "search_tools", query=EMAIL, limit=2, user="u2")


def agent_environment(stack: Stack, url: str | None = None) -> dict[str, str]:
    """A desktop client's environment: the URL of an identity, else none and the home of the running stack
    (where the operator's and the default tenant's credentials are)."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLSEL_NATS_URL"}
    return {**env, "TOOLSEL_HOME": str(stack.settings.home), **({"TOOLSEL_NATS_URL": url} if url else {})}


@contextmanager
def identity_of(stack: Stack, tenant: str) -> Iterator[identities.Made]:
    made = identities.create(stack.settings.home, tenant, "desk")
    try:
        yield made
    finally:
        identities.revoke(stack.settings.home, tenant, "desk")


async def test_toolsel_mcp_over_stdio_serves_the_identity_it_was_started_with(
    client: ToolselClient, stack: Stack
) -> None:
    tenant, plugin = await catalog(client)
    assert stack.nats is not None
    command, *args = TOOLSEL_COMMAND
    with identity_of(stack, tenant) as made:
        server = StdioServerParameters(
            command=command, args=[*args, "mcp"], env=agent_environment(stack, made.nats_url(stack.nats.url))
        )
        async with Client(server) as connected:
            found = await call(connected, "search_tools", query=EMAIL, limit=1)
            assert found["tools"][0]["tool"] == f"{plugin}/send_email"
            reviewed = await call(
                connected,
                "review_tools",
                session=found["session"],
                reviews=[{"tool": found["tools"][0]["name"], "verdict": "perfect"}],
            )
            assert reviewed["recorded"] == 1
        other = await asyncio.to_thread(
            subprocess.run,
            [command, *args, "mcp", "--tenant", "someone-else"],
            env=agent_environment(stack, made.nats_url(stack.nats.url)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert other.returncode == 2
        assert "its own tenant" in other.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def serving_http(stack: Stack, port: int, settings: dict[str, str] | None = None) -> Iterator[None]:
    """``toolsel mcp --transport http`` as a child process (with these settings in its environment), stopped
    afterwards."""
    args = ["mcp", "--transport", "http", "--port", str(port)]
    env = agent_environment(stack) | (settings or {})
    process = subprocess.Popen([*TOOLSEL_COMMAND, *args], env=env, stdout=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.terminate()
        process.wait(timeout=30)


def with_token(url: str, token: str) -> Any:
    """The SDK's streamable HTTP transport, sending ``token`` as the bearer."""
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}))


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


async def test_toolsel_mcp_over_streamable_http_serves_each_token_its_own_tenant(
    client: ToolselClient, stack: Stack
) -> None:
    (tenant, plugin), (other, _) = await catalog(client), await catalog(client)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with serving_http(stack, port), identity_of(stack, tenant) as mine, identity_of(stack, other) as theirs:

        async def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        assert await eventually(listening, timeout_s=60), "toolsel mcp --transport http did not listen"
        async with Client(with_token(url, mine.bearer)) as connected:
            found = await call(connected, "search_tools", query=EMAIL, limit=1)
            assert found["tools"][0]["tool"] == f"{plugin}/send_email"
        async with Client(with_token(url, theirs.bearer)) as connected:
            # the other tenant's own catalog, and no session of the first identity
            assert (await call(connected, "search_tools", query=EMAIL, limit=1))["tools"][0]["tool"] != (
                f"{plugin}/send_email"
            )
            assert "unknown or expired" in await refused(
                connected, "review_tools", session=found["session"], none_of_these=True
            )
        async with httpx2.AsyncClient() as http:
            headers = {"Accept": "application/json, text/event-stream"}
            for token in (None, "nobody:nothing", f"{mine.identity.scope.user}:wrong", "garbage"):
                sent = headers | ({"Authorization": f"Bearer {token}"} if token else {})
                answer = await http.post(url, json=INITIALIZE, headers=sent)
                assert answer.status_code == 401, (token, answer.status_code)
            identities.revoke(stack.settings.home, tenant, "desk")
            answer = await http.post(url, json=INITIALIZE, headers=headers | {"Authorization": f"Bearer {mine.bearer}"})
            assert answer.status_code == 401
            identities.create(stack.settings.home, tenant, "desk")  # for identity_of to revoke


async def test_the_handshake_over_stdio_and_http_says_the_tool_list_changes(stack: Stack) -> None:
    """search_tools sends notifications/tools/list_changed when it makes found tools callable; under the initialize
    handshake a client that heeds the capabilities listens for it only when they say ``tools.listChanged``."""
    command, *args = TOOLSEL_COMMAND
    over_stdio = StdioServerParameters(command=command, args=[*args, "mcp"], env=agent_environment(stack))
    port = free_port()
    with serving_http(stack, port), identity_of(stack, unique("tenant")) as made:

        async def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        assert await eventually(listening, timeout_s=60), "toolsel mcp --transport http did not listen"
        over_http = with_token(f"http://127.0.0.1:{port}/mcp", made.bearer)
        for served in (over_stdio, over_http):
            async with Client(served, mode="legacy") as connected:
                tools = connected.server_capabilities.tools
                assert tools is not None
                assert tools.list_changed is True


async def test_over_http_a_burst_of_wrong_tokens_is_refused_and_a_right_token_still_served(stack: Stack) -> None:
    """Audit F3: each wrong token cost a bcrypt check, queued with the right tokens' checks, and a valid identity's
    request waited behind a thousand of them. Now a token verified before is answered without a check; wrong ones
    are checked one at a time here, none waiting (past that: 503), and an address past its failures is refused
    unchecked (429). Each burst request comes from an address of its own, as a spread-out attacker's would."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    settings = {
        "TOOLSEL_MCP_TOKEN_CHECK_THREADS": "1",
        "TOOLSEL_MCP_TOKEN_CHECKS_WAITING": "0",
        "TOOLSEL_MCP_TOKEN_FAILURES": "2",
    }
    with serving_http(stack, port, settings), identity_of(stack, unique("tenant")) as made:

        async def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        assert await eventually(listening, timeout_s=60), "toolsel mcp --transport http did not listen"
        headers = {"Accept": "application/json, text/event-stream"}
        wrong = f"{made.identity.scope.user}:{'x' * 43}"

        async def sent(token: str, source: str = "127.0.0.1") -> httpx2.Response:
            transport = httpx2.AsyncHTTPTransport(local_address=source)
            async with httpx2.AsyncClient(transport=transport, timeout=120) as http:
                return await http.post(url, json=INITIALIZE, headers=headers | {"Authorization": f"Bearer {token}"})

        assert (await sent(made.bearer)).status_code == 200  # verified, and remembered
        *burst, right = await asyncio.gather(
            *(sent(f"{wrong[:-3]}{n:03}", f"127.0.0.{n}") for n in range(2, 202)), sent(made.bearer)
        )
        assert right.status_code == 200
        codes = [answer.status_code for answer in burst]
        assert set(codes) <= {401, 503}, codes
        assert 503 in codes, "every wrong token was queued for its check"
        assert all(answer.headers["Retry-After"] == "1" for answer in burst if answer.status_code == 503)
        one_address = [(await sent(wrong)).status_code for _ in range(3)]
        assert one_address == [401, 401, 429]
        refused = await sent(wrong)
        assert int(refused.headers["Retry-After"]) > 0
        assert (await sent(made.bearer)).status_code == 200  # the right token from that address
        assert (await sent(wrong, "127.0.0.250")).status_code == 401  # another address is checked
