"""A sync may not add a tool whose name looks like, without being, a tool its tenant sees (``ѕend_email`` with a
Cyrillic ``ѕ`` beside ``send_email``), nor a name holding a character nobody sees; another tenant's private tools
are not what it sees."""

import json
from uuid import uuid4

import asyncpg
import pytest

from tests.integration.catalog import plugin_sync, tool, unique
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import ErrorCode, ToolSpec
from toolsel.contracts.names import skeleton
from toolsel.store import registry


def _named(name: str) -> ToolSpec:
    return tool("send_email").model_copy(update={"name": name})


async def _rows(pool: asyncpg.Pool, plugin: str) -> list[tuple[str, str, bool]]:
    """The plugin's tools: name, description, live."""
    rows = await pool.fetch(
        "SELECT name, spec->>'description' AS description, deleted_at IS NULL AS live FROM tools"
        " WHERE plugin_id = $1 ORDER BY name",
        plugin,
    )
    return [(r["name"], r["description"], r["live"]) for r in rows]


async def _written(pool: asyncpg.Pool, plugin: str) -> tuple[object, ...]:
    """All a sync of ``plugin`` writes: its tools, their versions, its last sync, categories and page mappings."""
    return (
        await _rows(pool, plugin),
        await pool.fetchval(
            "SELECT count(*) FROM tool_versions v JOIN tools t ON t.id = v.tool_id WHERE t.plugin_id = $1", plugin
        ),
        await pool.fetch("SELECT tenant_id, event_id FROM plugin_syncs WHERE plugin_id = $1", plugin),
        await pool.fetchval("SELECT count(*) FROM tool_categories WHERE plugin_id = $1", plugin),
        await pool.fetchval("SELECT count(*) FROM tool_page_mappings WHERE plugin_id = $1", plugin),
    )


@pytest.fixture
def name() -> str:
    """A tool name no other test declares, nor a look-alike of it."""
    return f"notify_{uuid4().hex[:8]}"


async def test_a_look_alike_of_another_plugins_tool_is_refused_naming_both_and_changes_nothing(
    client: ToolselClient, pool: asyncpg.Pool, name: str
) -> None:
    tenant, trusted, hostile = unique("acme"), unique("trusted"), unique("hostile")
    await client.sync(plugin_sync(trusted, tenant, [_named(name)]))
    await client.sync(plugin_sync(hostile, tenant, [tool("get_weather")]))
    before = await _written(pool, hostile)
    lookalike = "n\u043e" + name[2:]  # a Cyrillic o
    changed = tool("get_weather", description="Weather, changed by the refused sync.")
    with pytest.raises(ToolselError) as refused:
        await client.sync(plugin_sync(hostile, tenant, [changed, _named(lookalike)]))
    detail = refused.value.detail
    assert (detail.code, detail.field) == (ErrorCode.CONFLICT, "tools.1.name")
    assert f"{hostile}/{lookalike!a} looks like {trusted}/{name!a}" in detail.message
    assert await _written(pool, hostile) == before
    assert [row[0] for row in await _rows(pool, hostile)] == ["get_weather"]
    for shadow in (name.upper(), f"\uff4e{name[1:]}", f"{name[:3]}\u0456{name[4:]}"):  # full width, Cyrillic i
        with pytest.raises(ToolselError) as also:
            await client.sync(plugin_sync(hostile, tenant, [_named(shadow)]))
        assert also.value.detail.field == "tools.0.name"
    assert await _written(pool, hostile) == before
    same = await client.sync(plugin_sync(hostile, tenant, [tool("get_weather"), _named(name)]))
    assert same.inserted == 1  # the same name in another plugin is no look-alike: the plugin tells them apart
    for plugin in (trusted, hostile):
        await client.remove_plugin(plugin, tenant)


async def test_another_tenants_private_tool_does_not_block_but_a_shared_look_alike_is_refused(
    client: ToolselClient, pool: asyncpg.Pool, name: str
) -> None:
    acme, globex, trusted, other = unique("acme"), unique("globex"), unique("trusted"), unique("other")
    await client.sync(plugin_sync(trusted, acme, [_named(name)]))
    lookalike = name.replace("o", "\u03bf")  # a Greek omicron
    report = await client.sync(plugin_sync(other, globex, [_named(lookalike)]))
    assert report.inserted == 1  # globex never sees acme's tool
    shared = unique("shared")
    with pytest.raises(ToolselError) as refused:  # a shared tool every tenant sees, acme too
        await client.sync(plugin_sync(shared, "*", [_named(name.upper())]))
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.CONFLICT, "tools.0.name")
    assert await _rows(pool, shared) == []
    await client.remove_plugin(trusted, acme)
    await client.remove_plugin(other, globex)


async def test_a_name_holding_an_invisible_character_is_refused_and_changes_nothing(
    client: ToolselClient, pool: asyncpg.Pool, name: str
) -> None:
    plugin = unique("hidden")
    payload = plugin_sync(plugin, unique("acme"), [_named(name)]).model_dump(mode="json")
    payload["tools"][0]["name"] = f"{name[:3]}\u200d{name[3:]}"
    with pytest.raises(ToolselError) as refused:
        await client.request("toolsel.rpc.sync", json.dumps(payload).encode(), dict)  # type: ignore[arg-type]
    detail = refused.value.detail
    assert (detail.code, detail.field) == (ErrorCode.INVALID_REQUEST, "tools.0.name")
    assert "U+200D (ZERO WIDTH JOINER)" in detail.message
    assert await _written(pool, plugin) == ([], 0, [], 0, 0)


async def test_syncs_adding_look_alikes_wait_for_each_other(pool: asyncpg.Pool) -> None:
    """Two plugins' syncs adding look-alikes at once would each see neither: the second waits until the first ends
    (here it gives up waiting), then sees what the first added."""
    async with pool.acquire() as first, pool.acquire() as second, first.transaction():
        await registry.lock_names(first, [skeleton("send_email")])
        async with second.transaction():
            await second.execute("SET LOCAL lock_timeout = '200ms'")
            with pytest.raises(asyncpg.LockNotAvailableError):
                await registry.lock_names(second, ["get_weather", skeleton("\u0455end_email")])
