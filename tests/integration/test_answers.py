"""Answers that fit the need, on the real stack: ``k: auto`` as the MCP server's default, a token budget, a
reason per tool, and learning filed under the query's intent: a success reported through MCP after the session
rejected the nearest tool is read by the same query asked through the client."""

from mcp import Client

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from tests.integration.test_mcp import EMAIL, call
from toolsel.cli.demo import demo_catalog
from toolsel.client import ToolselClient
from toolsel.contracts import CategorySpec, PinScope, RuleFields, SelectReply
from toolsel.mcp.server import create_server
from toolsel.mcp.sessions import Sessions
from toolsel.mcp.toolshed import Toolshed


async def test_what_mcp_learnt_is_read_by_the_same_query_through_the_client(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("mail")
    twin = tool("send_email").model_copy(update={"name": "send_email_v2", "description": "Send an email message."})
    others = [tool(n, category="other") for n in ("get_weather", "search_flights", "translate_text", "create_event")]
    categories = [CategorySpec(name="general"), CategorySpec(name="other")]
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("send_email"), twin, *others], categories=categories))
    server = create_server(Toolshed(client, Sessions(max_sessions=10, ttl_s=600), tenant_id=tenant))
    async with Client(server) as mcp:
        first = await call(mcp, "search_tools", query=EMAIL)  # no limit: as many as the request needs
        offered = [t["name"] for t in first["tools"]]
        assert offered[0] in {f"{plugin}__send_email", f"{plugin}__send_email_v2"}
        assert len(offered) < 6  # fewer than the catalog: the confidence supports only some
        assert all(t["reason"] for t in first["tools"])
        session = first["session"]
        rejected = next(name for name in offered if name.endswith("__send_email") or name.endswith("_v2"))
        kept = f"{plugin}__send_email_v2" if rejected.endswith("__send_email") else f"{plugin}__send_email"
        await call(mcp, "review_tools", session=session, reviews=[{"tool": rejected, "verdict": "broken"}])
        again = await call(mcp, "search_tools", query=EMAIL, session=session)
        assert kept in [t["name"] for t in again["tools"]]
        await call(mcp, "report_outcome", session=session, calls=[{"tool": kept, "success": True}])

    learnt_name = kept.split("__")[1]

    async def learnt() -> SelectReply | None:
        reply = await client.select(EMAIL, tenant_id=tenant, k=3, dry_run=True, seed=1)
        found = next((t for t in reply.tools if t.name == learnt_name), None)
        return reply if found is not None and found.breakdown.alpha > 1.0 else None

    reply = await eventually(learnt, timeout_s=30)
    assert reply is not None, "the same query through the client did not read what MCP taught"
    assert reply.intent in {f"{plugin}/send_email", f"{plugin}/send_email_v2"}  # the nearest, rejected or not
    assert reply.context_key == f"free:*:{reply.intent}"
    worked = next(t for t in reply.tools if t.name == learnt_name)
    assert "worked 1 of" in worked.reason


async def test_a_token_budget_holds_through_the_client(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("budget")
    names = ("send_email", "get_weather", "search_flights", "translate_text", "create_event")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in names]))
    whole = await client.select(EMAIL, tenant_id=tenant, k=5, dry_run=True, seed=1)
    budget = whole.tokens.selected - 1
    cut = await client.select(EMAIL, tenant_id=tenant, k=5, dry_run=True, seed=1, token_budget=budget)
    assert cut.tokens.selected <= budget
    assert cut.over_budget
    kept = {t.key for t in cut.tools}
    assert kept.isdisjoint(cut.over_budget)
    assert kept | set(cut.over_budget) == {t.key for t in whole.tools}


async def test_a_scoped_pin_joins_only_the_answers_in_its_scope(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("pins")
    health = tool("translate_text").model_copy(
        update={"name": "mail_health", "pinned": True, "pin_scope": PinScope(categories=["general"])}
    )
    weather = tool("get_weather", category="other")
    categories = [CategorySpec(name="general"), CategorySpec(name="other")]
    tools = [tool("send_email"), weather, health]
    await sync_and_wait(client, plugin_sync(plugin, tenant, tools, categories=categories))
    mail = await client.select(EMAIL, tenant_id=tenant, k=1, dry_run=True)
    forecast = await client.select("will it rain in London tomorrow", tenant_id=tenant, k=1, dry_run=True)
    assert mail.intent == f"{plugin}/send_email"  # in category general, the pin's scope
    assert [t.name for t in mail.tools] == ["mail_health", "send_email"]
    assert forecast.intent == f"{plugin}/get_weather"  # in category other
    assert [t.name for t in forecast.tools] == ["get_weather"]


async def test_an_organisation_unpins_a_tool_for_itself_without_hiding_it(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("pinned")
    tools = [tool("send_email"), tool("get_weather", pinned=True)]
    await sync_and_wait(client, plugin_sync(plugin, tenant, tools))
    ask = {"tenant_id": tenant, "k": 1, "dry_run": True, "seed": 1}
    assert [t.name for t in (await client.select(EMAIL, **ask)).tools] == ["get_weather", "send_email"]
    target = f"{plugin}/get_weather"
    rule = await client.create_rule(
        RuleFields(tenant_id=tenant, rule_type="org", effect="unpin", target_kind="tool", target=target)
    )

    async def unpinned() -> bool:
        return [t.name for t in (await client.select(EMAIL, **ask)).tools] == ["send_email"]

    try:
        assert await eventually(unpinned), "the unpin rule did not reach the selector"
        weather = await client.select("will it rain in London tomorrow", **ask)
        assert [(t.name, t.pinned) for t in weather.tools] == [("get_weather", False)]  # ranked, not hidden
    finally:
        await client.delete_rule(rule.id)


async def test_a_misspelt_request_finds_its_tool_and_is_no_no_match(client: ToolselClient) -> None:
    """The demo catalog (MetaTool's plugins): misspelt, the request read as pieces of other words and got a surf
    report, said to be no match; its words repaired against the catalog's, it gets the weather tool."""
    tenant = unique("tenant")
    own = [p.model_copy(update={"plugin_id": unique(p.plugin_id), "tenant_id": tenant}) for p in demo_catalog()]
    version = max([(await client.sync(plugin)).catalog_version for plugin in own])

    async def served() -> bool:
        return int((await client.health("selector")).details.get("catalog_version", 0)) >= version

    assert await eventually(served, timeout_s=60), "the selector did not load the demo catalog"
    spelt = await client.select("weather forecast for tomorrow", tenant_id=tenant, k=5, dry_run=True, seed=1)
    misspelt = await client.select("wether forcast for tomorow", tenant_id=tenant, k=5, dry_run=True, seed=1)
    found = [[t.name for t in reply.tools if not t.pinned] for reply in (spelt, misspelt)]  # the demo pins two
    assert [names[0] for names in found] == ["WeatherTool", "WeatherTool"]
    assert not misspelt.no_match
