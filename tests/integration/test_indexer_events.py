"""Syncs published as durable JetStream events: applied like requests, refused ones dead-lettered."""

import asyncpg
import nats.errors
from nats.js.api import DeliverPolicy

from tests.integration.catalog import eventually, plugin_sync, tool, unique
from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import subjects


async def test_a_sync_event_is_applied(client: ToolselClient) -> None:
    plugin = unique("events")
    sync = plugin_sync(plugin, unique("tenant"), [tool("get_weather")])
    await client.nc.jetstream().publish(subjects.SYNC_EVENTS, sync.model_dump_json().encode())

    async def applied() -> bool:
        try:
            return (await client.show_tool(plugin, "get_weather")).tool.embedding_status == "current"
        except ToolselError:
            return False

    assert await eventually(applied)


async def test_a_refused_sync_event_is_dead_lettered_and_changes_nothing(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    rows = await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = 'guarded'")
    sync = plugin_sync("guarded", unique("tenant"), [tool("send_email")], credential="forged")
    js = client.nc.jetstream()
    dead = await js.subscribe(subjects.dead_letter("sync"), ordered_consumer=True, deliver_policy=DeliverPolicy.NEW)
    payload = sync.model_dump_json().encode()
    await js.publish(subjects.SYNC_EVENTS, payload)

    async def dead_lettered() -> bool:
        try:
            return (await dead.next_msg(timeout=0.5)).data == payload
        except nats.errors.TimeoutError:
            return False

    assert await eventually(dead_lettered)
    assert await pool.fetchval("SELECT count(*) FROM tools WHERE plugin_id = 'guarded'") == rows
