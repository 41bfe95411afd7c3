"""toolsel as the gateway of the tools it finds: an agent on the MCP SDK's client searches, sees the found tools in
``tools/list``, calls them through toolsel on real MCP servers (tests/integration/upstream_mcp.py: one that works,
one that fails, one that hangs, one that answers garbage), and each call's outcome reaches the learner without the
agent reporting anything, for the selection of the agent that called it (also where agents share an identity over
HTTP); two tools whose plain names would read alike are named, called and reviewed apart. The gateway's own limits
(the size of an answer, the calls in flight per identity) and its errors are tested on the same servers without a
stack."""

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import uuid4

import asyncpg
import mcp.types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, unique
from tests.integration.test_mcp import agent_environment, call, free_port, identity_of, serving_http, with_token
from tests.integration.upstream_mcp import KEY
from toolsel.client import ToolselClient
from toolsel.contracts import ToolRef, ToolSpec
from toolsel.contracts.execution import mcp_server
from toolsel.mcp.gateway import Gateway, Proxied
from toolsel.mcp.server import create_server
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import SESSION_META, Toolshed
from toolsel.settings import Settings
from toolsel.stack import TOOLSEL_COMMAND, Stack

UPSTREAM = [sys.executable, str(Path(__file__).with_name("upstream_mcp.py"))]
WEATHER = "weather forecast for Rome"
EXAMPLES = ["weather forecast for Rome", "will it rain in Paris tomorrow", "temperature in Oslo"]
TIMEOUT_S = 10.0


def weather_tool(name: str, server: dict[str, Any] | None) -> ToolSpec:
    """A weather tool served by ``server`` (an MCP server declaration), or declaring none."""
    declared = {"execution_type": "mcp", "execution_config": server} if server is not None else {}
    return ToolSpec(
        name=name,
        description=f"Weather forecast for a city ({name}).",
        example_queries=EXAMPLES,
        server="weather-mcp",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        **declared,
    )


async def weather_catalog(client: ToolselClient, upstream: dict[str, Any]) -> tuple[str, str]:
    """A tenant whose plugin has the upstream server's four tools, one declaring a command the gateway may not
    start and one declaring no server."""
    tenant, plugin = unique("tenant"), unique("weather")
    tools = [weather_tool(name, upstream | {"tool": name}) for name in ("forecast", "flaky", "stall", "scramble")]
    tools.append(weather_tool("elsewhere", {"transport": "stdio", "command": ["rm", "-rf", "/"], "tool": "x"}))
    tools.append(weather_tool("by_hand", None))
    await sync_and_wait(client, plugin_sync(plugin, tenant, tools))
    return tenant, plugin


def gateway(plugin: str, **settings: Any) -> Gateway:
    allowed: dict[str, Any] = {"gateway_commands": [UPSTREAM], "gateway_timeout_s": TIMEOUT_S}
    secrets = {"gateway_secrets": {plugin: {"WEATHER_KEY": KEY}}, "plugin_secrets": {plugin: "its-credential"}}
    return Gateway(Settings(**allowed | secrets | settings))


async def outcomes_of(pool: asyncpg.Pool, selection_id: str, count: int) -> dict[str, dict[str, Any]]:
    """The calls the learner stored for a selection, by tool name, once ``count`` are in."""

    async def stored() -> dict[str, dict[str, Any]]:
        rows = await pool.fetch("SELECT calls FROM outcomes WHERE selection_id = $1", selection_id)
        calls = [c for row in rows for c in json.loads(row["calls"])]
        return {c["name"]: c for c in calls} if len(calls) >= count else {}

    return await eventually(stored, timeout_s=30)


def text(result: mcp.types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def proxied(server: dict[str, Any]) -> Proxied:
    """A tool of ``server`` (a declaration) as the gateway serves it once found, without a search."""
    declared = mcp_server(server)
    listed = mcp.types.Tool(name=f"weather__{declared.tool}", input_schema={"type": "object"})
    return Proxied(ToolRef(plugin_id="weather", name=declared.tool), uuid4(), declared, listed)


async def test_found_tools_are_called_through_toolsel_and_report_their_own_outcomes(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = await weather_catalog(client, {"transport": "stdio", "command": UPSTREAM})
    server = create_server(
        Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant, gateway=gateway(plugin))
    )
    changed: list[object] = []

    async def notified(message: object) -> None:
        if isinstance(message, mcp.types.ToolListChangedNotification):
            changed.append(message)

    async with Client(server, mode="legacy", message_handler=notified) as agent:
        before = {t.name for t in (await agent.list_tools()).tools}
        found = await call(agent, "search_tools", query=WEATHER, limit=8)
        mine = {t["tool"].split("/")[1]: t for t in found["tools"] if t["tool"].startswith(f"{plugin}/")}
        assert set(mine) == {"forecast", "flaky", "stall", "scramble", "elsewhere", "by_hand"}
        callable_ = {name for name, t in mine.items() if t["callable"]}
        assert callable_ == {"forecast", "flaky", "stall", "scramble"}
        assert mine["elsewhere"]["execution_config"]["command"] == ["rm", "-rf", "/"]  # shown, never run
        assert (mine["forecast"]["server"], mine["by_hand"]["execution_type"]) == ("weather-mcp", "internal")
        listed = {t.name for t in (await agent.list_tools()).tools}
        assert listed - before == {mine[name]["name"] for name in callable_}
        assert await eventually(lambda: asyncio.sleep(0, changed)), "no notifications/tools/list_changed"
        again = await call(agent, "search_tools", query=WEATHER, limit=8)  # the calls count for this selection
        assert len(changed) == 1, "the same tools found again changed the list"

        names = ("forecast", "flaky", "stall", "scramble")
        called = await asyncio.gather(*(agent.call_tool(mine[name]["name"], {"city": "Rome"}) for name in names))
        answers = dict(zip(names, called, strict=True))
    assert (answers["forecast"].is_error, text(answers["forecast"])) == (False, "sunny in Rome")
    assert (answers["flaky"].is_error, "weather service down" in text(answers["flaky"])) == (True, True)
    assert (answers["stall"].is_error, f"within {TIMEOUT_S:g} s" in text(answers["stall"])) == (True, True)
    assert answers["scramble"].is_error

    reported = await outcomes_of(pool, again["selection_id"], 4)
    assert {name: c["success"] for name, c in reported.items()} == {
        "forecast": True,
        "flaky": False,
        "stall": False,
        "scramble": False,
    }
    assert "weather service down" in reported["flaky"]["error"]
    assert reported["stall"]["latency_ms"] >= TIMEOUT_S * 1000
    assert all(c["latency_ms"] > 0 for c in reported.values())


def test_a_plugins_secrets_go_only_to_servers_its_credential_holders_declare() -> None:
    """Without a plugin credential any tenant may add a tool to the plugin, pointing at a server the operator
    allows but the plugin's owner does not run: the plugin's secrets are withheld from every call."""
    keys = {"gateway_secrets": {"weather": {"WEATHER_KEY": KEY}, "maps": {"MAPS_KEY": KEY}}}
    assert gateway("weather", **keys, plugin_secrets={"weather": "its-credential"}).secrets == {
        "weather": {"WEATHER_KEY": KEY}
    }
    assert gateway("weather", **keys, plugin_secrets={}).secrets == {}


async def test_a_server_without_its_credential_fails_and_a_name_not_found_is_no_proxy(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = await weather_catalog(client, {"transport": "stdio", "command": UPSTREAM})
    keyless = gateway(plugin, gateway_secrets={})
    server = create_server(Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant, gateway=keyless))
    async with Client(server) as agent:
        found = await call(agent, "search_tools", query=WEATHER, limit=8)
        forecast = next(t for t in found["tools"] if t["tool"] == f"{plugin}/forecast")
        answer = await agent.call_tool(forecast["name"], {"city": "Rome"})
        assert (answer.is_error, "no valid weather key" in text(answer)) == (True, True)
        unknown = await agent.call_tool(f"{plugin}__nowhere", {})
        assert (unknown.is_error, "Unknown tool" in text(unknown)) == (True, True)
    assert (await outcomes_of(pool, found["selection_id"], 1))["forecast"]["success"] is False


@contextmanager
def upstream_http(port: int) -> Iterator[str]:
    process = subprocess.Popen([*UPSTREAM, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


async def test_toolsel_mcp_over_stdio_calls_found_tools_on_an_http_server_as_its_identity(
    client: ToolselClient, stack: Stack, pool: asyncpg.Pool
) -> None:
    """The command a desktop client launches, as a tenant's identity: the found tool's HTTP server is called with
    the operator's credential for it, and the outcome counts for the identity's own selection."""
    port = free_port()
    with upstream_http(port) as url:
        assert await eventually(lambda: listening(port), timeout_s=30), "the upstream server did not listen"
        tenant, plugin = await weather_catalog(client, {"transport": "http", "url": url})
        with identity_of(stack, tenant) as made:
            environment = agent_environment(stack, made.nats_url(stack.nats.url)) | {
                "TOOLSEL_GATEWAY_URLS": json.dumps([f"http://127.0.0.1:{port}"]),
                "TOOLSEL_GATEWAY_SECRETS": json.dumps({plugin: {"X-Weather-Key": KEY}}),
                "TOOLSEL_PLUGIN_SECRETS": json.dumps({plugin: "its-credential"}),
            }
            command, *args = TOOLSEL_COMMAND
            served = StdioServerParameters(command=command, args=[*args, "mcp"], env=environment)
            async with Client(served) as agent:
                found = await call(agent, "search_tools", query=WEATHER, limit=8)
                forecast = next(t for t in found["tools"] if t["tool"] == f"{plugin}/forecast")
                answer = await agent.call_tool(forecast["name"], {"city": "Oslo"})
                assert (answer.is_error, text(answer)) == (False, "sunny in Oslo")
                assert forecast["name"] in {t.name for t in (await agent.list_tools()).tools}
    assert (await outcomes_of(pool, found["selection_id"], 1))["forecast"]["success"] is True


def http_settings(plugin: str) -> dict[str, str]:
    """What ``toolsel mcp --transport http`` runs with to call the weather plugin's upstream server."""
    return {
        "TOOLSEL_GATEWAY_COMMANDS": json.dumps([UPSTREAM]),
        "TOOLSEL_GATEWAY_SECRETS": json.dumps({plugin: {"WEATHER_KEY": KEY}}),
        "TOOLSEL_PLUGIN_SECRETS": json.dumps({plugin: "its-credential"}),
    }


async def test_toolsel_mcp_over_http_calls_found_tools_for_the_identity_of_the_token(
    client: ToolselClient, stack: Stack, pool: asyncpg.Pool
) -> None:
    """The shared HTTP server: the bearer's identity searches, the found tool is in its tools/list and is called
    on its stdio server, and the outcome counts for that identity's selection."""
    tenant, plugin = await weather_catalog(client, {"transport": "stdio", "command": UPSTREAM})
    port = free_port()
    settings = http_settings(plugin)
    with serving_http(stack, port, settings), identity_of(stack, tenant) as mine:
        assert await eventually(lambda: listening(port), timeout_s=60), "toolsel mcp --transport http did not listen"
        async with Client(with_token(f"http://127.0.0.1:{port}/mcp", mine.bearer)) as agent:
            found = await call(agent, "search_tools", query=WEATHER, limit=8)
            forecast = next(t for t in found["tools"] if t["tool"] == f"{plugin}/forecast")
            assert forecast["name"] in {t.name for t in (await agent.list_tools()).tools}
            answer = await agent.call_tool(forecast["name"], {"city": "Lima"})
    assert (answer.is_error, text(answer)) == (False, "sunny in Lima")
    assert (await outcomes_of(pool, found["selection_id"], 1))["forecast"]["success"] is True


async def test_agents_sharing_an_identity_over_http_have_their_calls_counted_for_their_own_selections(
    client: ToolselClient, stack: Stack, pool: asyncpg.Pool
) -> None:
    """Two agents on one bearer token, for two users. A call that names its session (``_meta``) counts for that
    session's selection; one that names none, while both sessions were offered the tool, counts for neither (it
    counted for the latest search, whoever made it)."""
    tenant, plugin = await weather_catalog(client, {"transport": "stdio", "command": UPSTREAM})
    port = free_port()
    settings = http_settings(plugin)
    url = f"http://127.0.0.1:{port}/mcp"
    with serving_http(stack, port, settings), identity_of(stack, tenant) as shared:
        assert await eventually(lambda: listening(port), timeout_s=60), "toolsel mcp --transport http did not listen"
        async with Client(with_token(url, shared.bearer)) as alice, Client(with_token(url, shared.bearer)) as bob:
            hers = await call(alice, "search_tools", query=WEATHER, limit=8, user="alice")
            his = await call(bob, "search_tools", query=WEATHER, limit=8, user="bob")
            forecast = next(t["name"] for t in hers["tools"] if t["tool"] == f"{plugin}/forecast")
            unnamed = await bob.call_tool(forecast, {"city": "Oslo"})
            named = await alice.call_tool(forecast, {"city": "Rome"}, meta={SESSION_META: hers["session"]})
    assert (text(unnamed), text(named)) == ("sunny in Oslo", "sunny in Rome")
    assert (await outcomes_of(pool, hers["selection_id"], 1))["forecast"]["success"] is True
    counted = "SELECT count(*) FROM outcomes WHERE selection_id = $1"
    assert [await pool.fetchval(counted, found["selection_id"]) for found in (hers, his)] == [1, 0]


async def test_two_tools_whose_plain_names_would_read_alike_are_named_called_and_reviewed_apart(
    client: ToolselClient,
) -> None:
    """Plugin P's ``mail__forecast`` and plugin ``P__mail``'s ``forecast`` both read ``P__mail__forecast`` as
    ``plugin__name``: one of them could never be called, and a review of one rejected the other."""
    tenant, plugin = unique("tenant"), unique("weather")
    upstream = {"transport": "stdio", "command": UPSTREAM}
    works = weather_tool("mail__forecast", upstream | {"tool": "forecast"})
    fails = weather_tool("forecast", upstream | {"tool": "flaky"})
    await sync_and_wait(client, plugin_sync(plugin, tenant, [works]))
    await sync_and_wait(client, plugin_sync(f"{plugin}__mail", tenant, [fails]))
    server = create_server(
        Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant, gateway=gateway(plugin))
    )
    async with Client(server) as agent:
        found = await call(agent, "search_tools", query=WEATHER, limit=5, explore=False)
        named = {t["tool"]: t["name"] for t in found["tools"]}
        good, bad = named[f"{plugin}/mail__forecast"], named[f"{plugin}__mail/forecast"]
        assert good != bad
        assert {good, bad} <= {t.name for t in (await agent.list_tools()).tools}
        assert text(await agent.call_tool(good, {"city": "Rome"})) == "sunny in Rome"
        assert "weather service down" in text(await agent.call_tool(bad, {"city": "Rome"}))
        session = found["session"]
        await call(agent, "review_tools", session=session, reviews=[{"tool": bad, "verdict": "unrelated"}])
        again = await call(agent, "search_tools", query=WEATHER, limit=5, explore=False, session=session)
    assert [t["tool"] for t in again["tools"] if t["tool"].startswith(plugin)] == [f"{plugin}/mail__forecast"]


async def test_an_answer_larger_than_the_limit_is_an_error_naming_it() -> None:
    gate = gateway("weather", gateway_result_max_bytes=4096)
    bulky = proxied({"transport": "stdio", "command": UPSTREAM, "tool": "bulky"})
    (small, fits), (large, refused) = [await gate.call(bulky, {"size": size}) for size in (100, 10_000)]
    assert (small.is_error, text(small), fits.success) == (False, "x" * 100, True)
    assert large.is_error
    assert "more than the gateway passes back (4096 bytes, TOOLSEL_GATEWAY_RESULT_MAX_BYTES)" in text(large)
    assert (refused.success, refused.error) == (False, text(large))


async def test_an_identitys_calls_past_its_slots_wait_and_another_identitys_do_not() -> None:
    """Six calls of one identity with two slots run two at a time, each within the time limit from its slot (the
    last two begin past it from the first); another identity's two run beside them at once."""
    port = free_port()
    with upstream_http(port) as url:
        assert await eventually(lambda: listening(port), timeout_s=30), "the upstream server did not listen"
        crowd = proxied({"transport": "http", "url": url, "tool": "crowd"})
        mine = gateway("weather", gateway_calls_per_identity=2, gateway_timeout_s=2.8)
        theirs = mine.for_identity()
        calls = [mine.call(crowd, {"caller": "mine"}) for _ in range(6)]
        calls += [theirs.call(crowd, {"caller": "theirs"}) for _ in range(2)]
        answers = await asyncio.gather(*calls)
    assert [made.error for _, made in answers] == [None] * 8
    assert max(made.latency_ms for _, made in answers) < 2800  # the tool's own, not the wait for a slot
    seen = [result.structured_content["result"] for result, _ in answers if result.structured_content]
    assert max(own for own, _ in seen[:6]) == 2
    assert max(own for own, _ in seen[6:]) == 2
    assert max(every for _, every in seen) > 2


async def test_a_failing_servers_error_names_its_cause() -> None:
    """The MCP SDK raises a server's failures inside exception groups; the agent and the learner read the cause."""
    gate, port = gateway("weather"), free_port()
    with upstream_http(port) as url:
        assert await eventually(lambda: listening(port), timeout_s=30), "the upstream server did not listen"
        elsewhere = proxied({"transport": "http", "url": url.replace("/mcp", "/elsewhere"), "tool": "forecast"})
        missing, _ = await gate.call(elsewhere, {"city": "Rome"})
    refused, made = await gate.call(proxied({"transport": "http", "url": url, "tool": "forecast"}), {"city": "Rome"})
    assert text(missing) == "the tool's MCP server failed: MCPError: Not Found"
    assert text(refused) == made.error == "the tool's MCP server failed: ConnectError: All connection attempts failed"
