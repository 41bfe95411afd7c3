"""Usage memory on the real stack: a success on a tenant's selection becomes a learnt example of the tool in
that tenant's scope only (no other tenant's, not the shared one), and the selectors are told the new version
once it is committed."""

import asyncio

import asyncpg
import nats.aio.msg
import numpy as np

from contracts import OutcomeEvent, ToolCall, UsageUpdated, subjects
from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient

VECTORS = """
SELECT v.scope, v.centroid, v.negative_centroid, v.positives, v.negatives, v.words, v.version
FROM tool_usage_vectors v JOIN tools t ON t.id = v.tool_id WHERE t.plugin_id = $1 AND t.name = $2
"""


async def test_a_success_teaches_the_tool_in_its_tenants_scope_and_is_broadcast_after_commit(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    tenant_a, plugin = unique("a"), unique("mine")
    await sync_and_wait(client, plugin_sync(plugin, tenant_a, [tool(n) for n in TOOLS]))
    reply = await client.select(
        query="is it going to snow in Oslo", tenant_id=tenant_a, k=5, filters={"plugins": [plugin]}
    )
    assert "get_weather" in {t.name for t in reply.tools}
    broadcasts: asyncio.Queue[nats.aio.msg.Msg] = asyncio.Queue()

    async def heard(msg: nats.aio.msg.Msg) -> None:
        await broadcasts.put(msg)

    subscription = await client.nc.subscribe(subjects.USAGE_UPDATED, cb=heard)
    try:
        call = ToolCall(plugin_id=plugin, name="get_weather", success=True)
        await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call])])

        async def learnt() -> list[asyncpg.Record]:
            found: list[asyncpg.Record] = await pool.fetch(VECTORS, plugin, "get_weather")
            return found

        rows = await eventually(learnt, timeout_s=30)
        notice = UsageUpdated.model_validate_json((await asyncio.wait_for(broadcasts.get(), timeout=30)).data)
    finally:
        await subscription.unsubscribe()
    assert [(r["scope"], r["positives"], r["negatives"], r["negative_centroid"], r["words"]) for r in rows] == [
        (tenant_a, 1, 0, None, ["is it going to snow in Oslo"])
    ]
    assert notice.version >= rows[0]["version"]
    assert notice.tools >= 1
    centroid = rows[0]["centroid"].to_numpy()
    assert abs(float(np.linalg.norm(centroid)) - 1.0) < 1e-4
    assert not await pool.fetchval(
        "SELECT count(*) FROM tool_usage_examples x JOIN tools t ON t.id = x.tool_id"
        " WHERE t.plugin_id = $1 AND x.scope <> $2",
        plugin,
        tenant_a,
    ), "another scope (another tenant or the shared one) learnt from tenant a"
