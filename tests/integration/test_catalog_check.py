"""The selector's periodic check against a real store: each live tool's last write names the tools a catalog copy
lacks or holds an older write of, and what left; those few read by id and spliced in give the copy a whole read
gives."""

import json

from toolsel.services.selector.catalog import build_catalog, stale_rows, with_changes
from toolsel.settings import Settings
from toolsel.store import catalog as store
from toolsel.store.pool import create_pool

INSERT = """
INSERT INTO tools (plugin_id, name, spec, content_hash, embedding)
VALUES ('p', $1, $2, repeat('0', 64), $3) RETURNING id
"""


def spec(name: str, description: str) -> str:
    return json.dumps({"name": name, "description": description, "parameters": {"type": "object"}})


async def test_the_check_reads_only_what_changed_and_ends_as_a_whole_read(empty_database: str) -> None:
    settings = Settings()
    pool = await create_pool(empty_database)
    try:
        vector = [1.0] + [0.0] * (settings.embedding_dim - 1)
        ids = {
            name: await pool.fetchval(INSERT, name, spec(name, f"{name} things"), vector)
            for name in ("send_email", "get_weather", "book_flight")
        }
        copy = build_catalog(await store.live_tools(pool), [], [], settings)
        assert stale_rows(copy, await store.live_writes(pool)) == ({}, set())

        # as the registry writes: every write of a tool stamps its updated_at (a missed broadcast each)
        await pool.execute(
            "UPDATE tools SET spec = $2, updated_at = now() WHERE id = $1",
            ids["get_weather"],
            spec("get_weather", "hourly forecast by city"),
        )
        await pool.execute("UPDATE tools SET deleted_at = now(), updated_at = now() WHERE id = $1", ids["book_flight"])
        ids["track_parcel"] = await pool.fetchval(INSERT, "track_parcel", spec("track_parcel", "parcels"), None)

        stale, gone = stale_rows(copy, await store.live_writes(pool))
        assert stale == {ids["get_weather"]: "p/get_weather", ids["track_parcel"]: "p/track_parcel"}
        assert gone == {"p/book_flight"}
        read = await store.live_tools_by_id(pool, list(stale))
        checked = with_changes(copy, read, gone, [], [], settings)
        whole = build_catalog(await store.live_tools(pool), [], [], settings)
        assert checked.keys == whole.keys == ["p/get_weather", "p/send_email", "p/track_parcel"]
        assert checked.written.tolist() == whole.written.tolist()
        assert checked.specs == whole.specs
        assert checked.has_vector.tolist() == [True, True, False]
        assert checked.lexical.scores("hourly forecast").tolist() == whole.lexical.scores("hourly forecast").tolist()
        assert stale_rows(checked, await store.live_writes(pool)) == ({}, set())
        assert await store.live_tools_by_id(pool, [ids["book_flight"]]) == []  # deleted: not live
    finally:
        await pool.close()


async def test_a_tools_last_write_is_the_catalog_versions_unit(empty_database: str) -> None:
    """``written`` counts microseconds as ``CATALOG_VERSION`` does: the latest write is the version."""
    pool = await create_pool(empty_database)
    try:
        await pool.fetchval(INSERT, "send_email", spec("send_email", "mail"), None)
        writes = await store.live_writes(pool)
        assert [r["written"] for r in writes] == [await store.catalog_version(pool)]
        assert isinstance(writes[0]["written"], int)
    finally:
        await pool.close()


async def test_the_posteriors_check_reads_the_recent_ones_and_counts_them_all(empty_database: str) -> None:
    pool = await create_pool(empty_database)
    try:
        tool = await pool.fetchval(INSERT, "send_email", spec("send_email", "mail"), None)
        write = (
            "INSERT INTO tool_bandit_stats (tool_id, tenant_id, context_key, alpha, beta, updated_at)"
            " VALUES ($1, $2, 'free:*:general', $3, 1, now() - make_interval(secs => $4))"
        )
        await pool.execute(write, tool, "acme", 3.0, 0.0)
        await pool.execute(write, tool, "globex", 5.0, 600.0)  # written ten minutes ago

        recent = await store.posteriors_since(pool, 120.0)

        assert [(r["key"], r["tenant_id"], r["alpha"]) for r in recent] == [("p/send_email", "acme", 3.0)]
        assert await store.posterior_count(pool) == len(await store.posteriors(pool)) == 2
    finally:
        await pool.close()
