"""Plugin sync through NATS: differential by content hash, authorised, one transaction."""

import json

import asyncpg
import pytest

from contracts import ErrorCode
from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient, ToolselError


async def test_same_catalog_twice_writes_and_embeds_nothing(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("twice")
    sync = plugin_sync(plugin, tenant, [tool(n) for n in TOOLS])
    await sync_and_wait(client, sync)
    versions = await pool.fetchval(
        "SELECT count(*) FROM tool_versions v JOIN tools t ON t.id = v.tool_id WHERE t.plugin_id = $1", plugin
    )
    again = await client.sync(sync.model_copy(update={"event_id": sync.event_id.__class__(int=1)}))
    assert (again.inserted, again.updated, again.unchanged, again.deleted, again.embedded) == (0, 0, 5, 0, 0)
    assert versions == await pool.fetchval(
        "SELECT count(*) FROM tool_versions v JOIN tools t ON t.id = v.tool_id WHERE t.plugin_id = $1", plugin
    )


async def test_changing_one_tool_re_embeds_exactly_that_one(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, plugin = unique("tenant"), unique("one")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    before = {
        r["name"]: r["last_embedded_at"]
        for r in await pool.fetch("SELECT name, last_embedded_at FROM tools WHERE plugin_id = $1", plugin)
    }
    changed = [tool(n) for n in TOOLS if n != "get_weather"] + [
        tool("get_weather", example_queries=["is it sunny in Madrid", "forecast for the weekend"])
    ]
    report = await client.sync(plugin_sync(plugin, tenant, changed))
    assert (report.updated, report.unchanged, report.embedded) == (1, 4, 1)
    after = await pool.fetch("SELECT name, last_embedded_at, embedding_status FROM tools WHERE plugin_id = $1", plugin)
    moved = {r["name"] for r in after if r["last_embedded_at"] != before[r["name"]]}
    assert moved == {"get_weather"}
    assert {r["embedding_status"] for r in after} == {"current"}
    version = await pool.fetchrow(
        "SELECT v.version, v.changed_fields FROM tool_versions v JOIN tools t ON t.id = v.tool_id"
        " WHERE t.plugin_id = $1 AND t.name = 'get_weather' ORDER BY v.version DESC LIMIT 1",
        plugin,
    )
    assert (version["version"], version["changed_fields"]) == (2, ["example_queries"])


async def test_a_removed_tool_disappears_from_selections(client: ToolselClient) -> None:
    tenant, plugin = unique("tenant"), unique("gone")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather")]))
    report = await client.sync(plugin_sync(plugin, tenant, [tool("get_weather")]))
    assert report.deleted == 1

    async def gone() -> bool:
        reply = await client.select(query="send an email to Bob", tenant_id=tenant, k=5, dry_run=True)
        return [t.name for t in reply.tools] == ["get_weather"]

    assert await eventually(gone)


@pytest.mark.parametrize("credential", [None, "wrong"])
async def test_bad_credential_is_refused_and_changes_nothing(
    client: ToolselClient, pool: asyncpg.Pool, credential: str | None
) -> None:
    sync = plugin_sync("guarded", unique("tenant"), [tool("send_email")], credential=credential)
    with pytest.raises(ToolselError) as refused:
        await client.sync(sync)
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.UNAUTHORIZED, "credential")
    assert await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = 'guarded'") == 0


async def test_right_credential_is_accepted(client: ToolselClient) -> None:
    report = await client.sync(plugin_sync("guarded", unique("tenant"), [tool("send_email")], credential="s3cret"))
    assert report.inserted + report.unchanged + report.updated == 1


async def test_invalid_sync_gets_a_typed_error_naming_the_field(client: ToolselClient, pool: asyncpg.Pool) -> None:
    plugin = unique("bad")
    payload = plugin_sync(plugin, unique("tenant"), [tool("send_email")]).model_dump(mode="json")
    payload["tools"][0]["pin_weight"] = -3
    with pytest.raises(ToolselError) as invalid:
        await client.request("toolsel.rpc.sync", __import__("json").dumps(payload).encode(), dict)  # type: ignore[arg-type]
    assert invalid.value.detail.code == ErrorCode.INVALID_REQUEST
    assert invalid.value.detail.field == "tools.0.pin_weight"
    assert await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = $1", plugin) == 0


async def test_one_sync_inserts_updates_revives_and_deletes_each_with_its_own_version(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant, plugin = unique("tenant"), unique("mixed")
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email"), tool("get_weather"), tool("search_flights")]))
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email"), tool("search_flights")]))  # get_weather goes
    edited = tool("send_email", description="Send an email, with attachments.")
    report = await client.sync(
        plugin_sync(plugin, tenant, [edited, tool("get_weather"), tool("translate_text"), tool("create_event")])
    )
    assert (report.inserted, report.updated, report.unchanged, report.deleted) == (2, 2, 0, 1)
    rows = await pool.fetch(
        "SELECT t.name, v.version, v.changed_fields, v.snapshot, t.content_hash = v.content_hash AS same_hash"
        " FROM tool_versions v JOIN tools t ON t.id = v.tool_id WHERE t.plugin_id = $1 ORDER BY t.name, v.version",
        plugin,
    )
    history = [(r["name"], r["version"], r["changed_fields"]) for r in rows]
    assert history == [
        ("create_event", 1, ["created"]),
        ("get_weather", 1, ["created"]),
        ("get_weather", 2, ["deleted_at"]),  # revived: the spec is as it was
        ("search_flights", 1, ["created"]),
        ("send_email", 1, ["created"]),
        ("send_email", 2, ["description"]),
        ("translate_text", 1, ["created"]),
    ]
    latest = {r["name"]: json.loads(r["snapshot"]) for r in rows}  # each name's last version
    assert latest["send_email"]["spec"]["description"] == "Send an email, with attachments."
    assert latest["get_weather"]["deleted_at"] is None
    assert all("embedding" not in snapshot for snapshot in latest.values())
    assert all(r["same_hash"] for r in rows if (r["name"], r["version"]) != ("send_email", 1))
    live = await pool.fetch(
        "SELECT name, embedding_status, deleted_at IS NULL AS live FROM tools WHERE plugin_id = $1 ORDER BY name",
        plugin,
    )
    assert [(r["name"], r["embedding_status"], r["live"]) for r in live] == [
        ("create_event", "current", True),
        ("get_weather", "current", True),
        ("search_flights", "current", False),
        ("send_email", "current", True),
        ("translate_text", "current", True),
    ]
