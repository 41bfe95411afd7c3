"""The indexer's admin requests through NATS: history, rollback, approval, drift and recompute."""

import asyncpg
import pytest

from tests.integration.catalog import eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import ErrorCode

WEATHER_QUERY = "will it rain tomorrow in London"
HIJACKED = {
    "description": "Translate text between languages.",
    "example_queries": ["translate this sentence into Spanish", "say thank you in Japanese"],
}


async def _ranking(client: ToolselClient, tenant: str, query: str) -> list[tuple[str, str]]:
    reply = await client.select(query=query, tenant_id=tenant, k=5, dry_run=True, seed=7)
    return [(t.name, t.description) for t in reply.tools]


async def test_history_shows_the_diff_of_each_version(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("history")
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather")]))
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather", description="Weather, now with radar.")]))
    history = await client.tool_versions(plugin, "get_weather")
    assert [(v.version, v.changed_fields) for v in history.versions] == [(1, ["created"]), (2, ["description"])]
    assert history.versions[1].diff["description"].model_dump() == {
        "before": "Current weather and forecast for a city.",
        "after": "Weather, now with radar.",
    }
    assert history.versions[0].diff["name"].after == "get_weather"


async def test_rollback_restores_the_previous_description_and_ranking(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = unique("tenant"), unique("rollback")
    names = ("get_weather", "send_email", "translate_text")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in names]))
    before = await _ranking(client, tenant, WEATHER_QUERY)
    assert before[0][0] == "get_weather"

    changed = [tool(n) for n in names if n != "get_weather"] + [tool("get_weather", **HIJACKED)]
    await client.sync(plugin_sync(plugin, tenant, changed))

    async def moved() -> bool:
        return await _ranking(client, tenant, WEATHER_QUERY) != before

    assert await eventually(moved), "the changed description never reached the selector"

    report = await client.rollback_tool(plugin, "get_weather", 1)
    assert (report.restored_version, report.new_version, report.embedded) == (1, 3, 1)
    assert {"description", "example_queries"} <= set(report.changed_fields)
    assert report.tool.embedding_status == "current"

    async def restored() -> bool:
        return await _ranking(client, tenant, WEATHER_QUERY) == before

    assert await eventually(restored), "the ranking did not come back after the rollback"
    latest = (await client.tool_versions(plugin, "get_weather")).versions[-1]
    assert (latest.version, latest.reason) == (3, "rollback to v1")
    assert latest.diff["description"].after == "Current weather and forecast for a city."
    assert (
        await pool.fetchval(
            "SELECT spec->>'description' FROM tools WHERE plugin_id = $1 AND name = 'get_weather'", plugin
        )
        == "Current weather and forecast for a city."
    )


async def test_rollback_to_the_current_state_writes_nothing(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("same")
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email")]))
    report = await client.rollback_tool(plugin, "send_email", 1)
    assert (report.new_version, report.changed_fields, report.embedded) == (1, [], 0)


async def test_unknown_tool_or_version_is_not_found(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("missing")
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email")]))
    with pytest.raises(ToolselError) as no_tool:
        await client.show_tool(plugin, "no_such_tool")
    assert (no_tool.value.detail.code, no_tool.value.detail.field) == (ErrorCode.NOT_FOUND, "name")
    with pytest.raises(ToolselError) as no_version:
        await client.rollback_tool(plugin, "send_email", 9)
    assert (no_version.value.detail.code, no_version.value.detail.field) == (ErrorCode.NOT_FOUND, "version")


async def test_a_changed_description_of_an_approved_tool_waits_for_approval(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("approve")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather")]))
    approved = await client.approve_tool(plugin, "get_weather")
    assert (approved.tool.approved, approved.tool.review_flag, approved.tool.status) == (True, False, "active")

    report = await client.sync(plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather", **HIJACKED)]))
    assert (report.updated, report.flagged) == (1, 1)
    flagged = await client.list_tools(plugin_id=plugin, flagged=True)
    assert [(t.name, t.status) for t in flagged.tools] == [("get_weather", "draft")]

    async def offered() -> bool:
        reply = await client.select(query=WEATHER_QUERY, tenant_id=tenant, k=5, dry_run=True)
        return "get_weather" in {t.name for t in reply.tools}

    async def held_back() -> bool:
        return not await offered()

    assert await eventually(held_back), "a flagged tool stayed selectable"

    detail = await client.approve_tool(plugin, "get_weather")
    assert (detail.tool.review_flag, detail.tool.status) == (False, "active")
    assert detail.spec["description"] == HIJACKED["description"]
    assert await eventually(offered), "an approved tool did not come back"
    assert (await client.list_tools(plugin_id=plugin, flagged=True)).tools == []
    reasons = [v.reason for v in (await client.tool_versions(plugin, "get_weather")).versions]
    assert reasons[-1] == "approved"
    assert reasons.count("approved") == 2


async def test_list_filters_by_plugin_and_status(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("list")
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather")]))
    await client.sync(plugin_sync(plugin, tenant, [tool("get_weather")]))
    live = await client.list_tools(plugin_id=plugin)
    assert [t.name for t in live.tools] == ["get_weather"]
    everything = await client.list_tools(plugin_id=plugin, include_deleted=True)
    assert [(t.name, t.deleted_at is not None) for t in everything.tools] == [
        ("get_weather", False),
        ("send_email", True),
    ]
    assert (await client.list_tools(plugin_id=plugin, status="retired")).tools == []


async def test_drift_report_and_recompute(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("drift")
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather"), tool("create_event")]))
    assert (await client.drift(plugin)).tools == []
    # age one vector past the drift age and mark another stale, as time and a failed pass would
    await pool.execute(
        "UPDATE tools SET last_embedded_at = now() - interval '10 days' WHERE plugin_id = $1 AND name = 'send_email'",
        plugin,
    )
    await pool.execute(
        "UPDATE tools SET embedding_status = 'stale' WHERE plugin_id = $1 AND name = 'get_weather'", plugin
    )
    report = await client.drift(plugin)
    assert report.days == 7
    assert [(t.name, t.reason) for t in report.tools] == [("send_email", "old"), ("get_weather", "stale")]
    assert report.tools[0].days_since_embed == pytest.approx(10, abs=0.01)
    assert [t.name for t in (await client.drift(plugin, days=30)).tools] == ["get_weather"]

    recomputed = await client.recompute_embeddings(plugin)
    assert recomputed.marked == 2
    assert recomputed.embedded >= 2
    assert (await client.drift(plugin)).tools == []

    forced = await client.recompute_embeddings(plugin, force=True)
    assert (forced.marked, forced.embedded) == (3, 3)
