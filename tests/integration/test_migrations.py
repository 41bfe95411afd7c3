"""Upgrading a store that has data: migration 009 keeps each tool's quality, health and quarantine under the
tool's own tenant (``*`` for a shared tool), the base every tenant starts from."""

import asyncpg

from toolsel.store import catalog, pool, readmodels

TENANT_HEALTH = 9


async def test_a_stores_health_is_kept_under_each_tools_own_tenant(empty_database: str) -> None:
    await pool.migrate(empty_database, before=TENANT_HEALTH)
    conn = await asyncpg.connect(empty_database)
    try:
        ids = {}
        for plugin, tenant in (("mine", "acme"), ("shared", "*")):
            ids[plugin] = await conn.fetchval(
                "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash) VALUES ($1, 'get_weather', $2,"
                " '{}', repeat('0', 64)) RETURNING id",
                plugin,
                tenant,
            )
            await conn.execute(
                "INSERT INTO tool_quality (tool_id, calls, failures, state) VALUES ($1, 20, 18, 'degraded')",
                ids[plugin],
            )
        await conn.execute("INSERT INTO tool_quarantine (tool_id, reason) VALUES ($1, 'failing')", ids["shared"])

        assert [name for name in await pool.migrate(empty_database) if name.startswith("009")] == [
            "009_tenant_health.sql"
        ]

        kept = await conn.fetch("SELECT tool_id, tenant_id, calls, state FROM tool_quality ORDER BY tool_id")
        assert [tuple(r) for r in kept] == [(ids["mine"], "acme", 20, "degraded"), (ids["shared"], "*", 20, "degraded")]
        quarantined = await conn.fetch("SELECT tool_id, tenant_id FROM tool_quarantine WHERE released_at IS NULL")
        assert [tuple(r) for r in quarantined] == [(ids["shared"], "*")]
        live = {r["plugin_id"]: r["quarantined"] for r in await conn.fetch(catalog.LIVE_TOOLS)}
        assert live == {"mine": False, "shared": True}  # the base every tenant starts from
        server = await asyncpg.create_pool(empty_database, min_size=1, max_size=1)
        try:
            health = await readmodels.tool_health(server, "shared", "get_weather")
        finally:
            await server.close()
        assert [(r["tenant_id"], r["state"]) for r in health] == [("*", "quarantined")]
        # a tenant's own row of the shared tool now sits beside the base
        await conn.execute(
            "INSERT INTO tool_quality (tool_id, tenant_id, calls) VALUES ($1, 'globex', 1)", ids["shared"]
        )
    finally:
        await conn.close()
