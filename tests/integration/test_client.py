"""The client against the embedded stack: generated methods (requests and events), the sync wrapper for
scripts, and what a reply now carries for agents (usage hints, related tools following the top tool)."""

import asyncio

from tests.integration.catalog import plugin_sync, sync_and_wait, tool, unique
from toolsel import SyncToolselClient, ToolselClient
from toolsel.contracts import CategorySpec, OutcomeEvent, ToolCall, ToolRef, ToolReview, Verdict
from toolsel.stack import Endpoints
from toolsel.tool_shapes import ToolNames, openai_tools

EMAIL = "email my boss the quarterly report"


async def test_generated_admin_methods_and_events(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("mail")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather")]))
    tree = await client.list_categories(plugin)
    assert [c.name for c in tree.categories] == ["general"]
    assert (await client.page_categories("/inbox/today")).categories
    assert {t.name for t in (await client.list_tools(plugin_id=plugin)).tools} == {"send_email", "get_weather"}

    reply = await client.select(EMAIL, tenant_id=tenant, k=1)
    review = await client.review(
        reply.selection_id, [ToolReview(plugin_id=plugin, name="send_email", verdict="perfect")]
    )
    assert review.reviews[0].verdict is Verdict.PERFECT
    assert (await client.none_of_these(reply.selection_id)).none_of_these
    outcome = await client.report_outcome(
        reply.selection_id, [ToolCall(plugin_id=plugin, name="send_email", success=True)]
    )
    assert isinstance(outcome, OutcomeEvent)
    feedback = await client.feedback(plugin, "send_email", 0.9, tenant_id=tenant, comment="fast")
    assert feedback.rating == 0.9


async def test_the_top_tools_related_tools_follow_it_when_there_is_room(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("mail")
    tools = [
        tool("send_email", usage_hint="Recipients go in 'query'.", related_tools=["create_event", "no_such_tool"]),
        *(tool(name, category="other") for name in ("get_weather", "search_flights", "translate_text", "create_event")),
    ]
    categories = [CategorySpec(name="general"), CategorySpec(name="other")]
    await sync_and_wait(client, plugin_sync(plugin, tenant, tools, categories=categories))
    ask = {"tenant_id": tenant, "k": 3, "dry_run": True, "seed": 7}
    ranked = await client.select(EMAIL, **ask)
    top = ranked.tools[0]
    assert top.name == "send_email"
    assert top.usage_hint == "Recipients go in 'query'."
    assert top.related_tools == [ToolRef(plugin_id=plugin, name="create_event")]  # live tools only
    assert all(t.related_to is None for t in ranked.tools)  # no room left: nothing added

    # the page narrows the ranking to the mail tool, which leaves room: its related tool follows, marked as such
    narrowed = await client.select(EMAIL, **ask, page="/inbox")
    assert [t.name for t in narrowed.tools] == ["send_email", "create_event"]
    assert narrowed.tools[1].related_to == ToolRef(plugin_id=plugin, name="send_email")

    # min_score bounds related tools too; and rejected tools never come back as related ones
    bound = narrowed.tools[1].confidence + 1e-6
    assert all(t.confidence >= bound for t in (await client.select(EMAIL, **ask, filters={"min_score": bound})).tools)
    excluded = await client.select(EMAIL, **ask, page="/inbox", filters={"exclude": [top.related_tools[0]]})
    assert [t.name for t in excluded.tools] == ["send_email"]


def test_the_sync_client_for_scripts(endpoints: Endpoints) -> None:
    """A script's whole loop without asyncio: select, hand the tools over, report."""
    tenant, plugin = unique("tenant"), unique("weather")
    with SyncToolselClient(endpoints.nats_url) as client:
        asyncio.run(_sync_catalog(endpoints.nats_url, plugin, tenant))
        reply = client.select("what's the weather in Paris", tenant_id=tenant, k=2)
        shapes = openai_tools(reply)
        called = ToolNames.of(reply).resolve(shapes[0]["function"]["name"])
        assert called == ToolRef(plugin_id=plugin, name="get_weather")
        client.report_outcome(reply.selection_id, [ToolCall(plugin_id=plugin, name=called.name, success=True)])
        assert client.health("selector").service == "selector"
        assert client.show_tool(plugin, "get_weather").tool.name == "get_weather"
        assert client.run(client.aio.select("weather", tenant_id=tenant, k=1, dry_run=True)).tools


async def _sync_catalog(url: str, plugin: str, tenant: str) -> None:
    async with ToolselClient(url) as client:
        await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
