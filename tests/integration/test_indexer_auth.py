"""Authorisation through NATS: a plugin writes only its own namespace, proven by its secret or a signature.

The session stack configures one guarded plugin (``guarded``, secret ``s3cret``) and test_sync checks that
refused syncs leave it empty, so a test here that writes it removes what it wrote.
"""

import asyncpg
import pytest

from tests.integration.catalog import GUARDED_TENANT, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import ErrorCode, PluginSync, SyncReport, payload_signature, subjects

GUARDED, SECRET = "guarded", "s3cret"


async def _guarded_rows(pool: asyncpg.Pool) -> int:
    count: int = await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = $1", GUARDED)
    return count


async def _forget_guarded(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            "DELETE FROM tool_versions WHERE tool_id IN (SELECT id FROM tools WHERE plugin_id = $1)", GUARDED
        )
        for table in ("tools", "tool_categories", "tool_page_mappings"):
            await conn.execute(f"DELETE FROM {table} WHERE plugin_id = $1", GUARDED)


async def _refused(client: ToolselClient, payload: bytes) -> ToolselError:
    with pytest.raises(ToolselError) as refused:
        await client.request(subjects.SYNC, payload, SyncReport)
    assert (refused.value.detail.code, refused.value.detail.field) == (ErrorCode.UNAUTHORIZED, "credential")
    return refused.value


async def test_a_signed_sync_is_accepted(client: ToolselClient, pool: asyncpg.Pool) -> None:
    rows = await _guarded_rows(pool)
    try:
        sync = plugin_sync(GUARDED, GUARDED_TENANT, [tool("send_email"), tool("get_weather")])
        report = await client.sync(sync, signing_key=SECRET)
        assert report.inserted + report.updated + report.unchanged == 2
    finally:
        if rows == 0:
            await _forget_guarded(pool)


async def test_a_bad_signature_is_refused_and_changes_nothing(client: ToolselClient, pool: asyncpg.Pool) -> None:
    rows = await _guarded_rows(pool)
    payload = plugin_sync(GUARDED, GUARDED_TENANT, [tool("send_email")]).model_dump(mode="json")
    wrong_key = {**payload, "credential": payload_signature(payload, "not-the-secret")}
    await _refused(client, PluginSync.model_validate(wrong_key).model_dump_json().encode())
    # a genuine signature does not carry over to a payload with other tools
    tampered = {**payload, "credential": payload_signature(payload, SECRET)}
    tampered["tools"] = [tool("create_event").model_dump(mode="json")]
    await _refused(client, PluginSync.model_validate(tampered).model_dump_json().encode())
    assert await _guarded_rows(pool) == rows


async def test_another_plugin_cannot_write_a_guarded_namespace(client: ToolselClient, pool: asyncpg.Pool) -> None:
    rows = await _guarded_rows(pool)
    intruder = unique("intruder")
    # an open plugin's own sync works, but claiming the guarded id with its own (or no) proof does not
    await client.sync(plugin_sync(intruder, unique("tenant"), [tool("send_email")]))
    claim = plugin_sync(GUARDED, GUARDED_TENANT, [tool("send_email")], credential=intruder)
    await _refused(client, claim.model_dump_json().encode())
    signed_by_intruder = claim.model_dump(mode="json") | {
        "credential": payload_signature(claim.model_dump(mode="json"), intruder)
    }
    await _refused(client, PluginSync.model_validate(signed_by_intruder).model_dump_json().encode())
    assert await _guarded_rows(pool) == rows


async def test_same_tool_name_in_two_plugins_stays_apart(client: ToolselClient, pool: asyncpg.Pool) -> None:
    tenant, mine, theirs = unique("tenant"), unique("mine"), unique("theirs")
    await sync_and_wait(client, plugin_sync(mine, tenant, [tool("send_email")]))
    await sync_and_wait(client, plugin_sync(theirs, tenant, [tool("send_email", description="Spam everyone.")]))
    report = await client.sync(plugin_sync(theirs, tenant, [tool("get_weather")]))
    assert report.deleted == 1
    mine_now = await client.show_tool(mine, "send_email")
    assert (mine_now.spec["description"], mine_now.tool.deleted_at, mine_now.versions) == (
        "Send an email message to one or more recipients.",
        None,
        1,
    )
