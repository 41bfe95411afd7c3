"""Applying a plugin sync to the store: one transaction for the declaration, then the re-embedding pass."""

import json
import time
from dataclasses import dataclass

import asyncpg

from contracts import PluginSync, SyncReport, ToolSpec
from services.indexer.diff import StoredTool, SyncPlan, plan_sync
from services.indexer.hashing import embedding_hash
from services.indexer.review import needs_review, status_after_update
from services.indexer.tool2vec import tool_vectors
from toolsel.embedder import Embedder


async def lock_plugin(conn: asyncpg.Connection, plugin_id: str) -> None:
    """Serialise the writes to one plugin's tools (syncs, rollbacks, approvals) until the transaction ends."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", plugin_id)


@dataclass(frozen=True)
class Origin:
    """Who writes tools and in whose name: a plugin's sync or an operator's request."""

    plugin_id: str
    tenant_id: str
    plugin_version: str
    reason: str


async def stored_tools(conn: asyncpg.Connection, plugin_id: str) -> dict[str, StoredTool]:
    rows = await conn.fetch(
        "SELECT id, name, content_hash, deleted_at IS NOT NULL AS deleted, spec FROM tools WHERE plugin_id = $1",
        plugin_id,
    )
    return {r["name"]: StoredTool(r["id"], r["content_hash"], r["deleted"], json.loads(r["spec"])) for r in rows}


async def snapshot_version(conn: asyncpg.Connection, tool_id: int, fields: list[str], digest: str, reason: str) -> int:
    """Append the row as it now stands to its history; returns the new version number."""
    version: int = await conn.fetchval(
        """INSERT INTO tool_versions (tool_id, version, snapshot, changed_fields, content_hash, reason)
           SELECT t.id, COALESCE((SELECT max(version) FROM tool_versions WHERE tool_id = t.id), 0) + 1,
                  to_jsonb(t) - 'embedding', $2, $3, $4
           FROM tools t WHERE t.id = $1 RETURNING version""",
        tool_id,
        fields,
        digest,
        reason,
    )
    return version


async def write_plan(
    conn: asyncpg.Connection, origin: Origin, plan: SyncPlan, stored: dict[str, StoredTool], flagged_selectable: bool
) -> int:
    """Insert, update (each with a version snapshot) and soft-delete per the plan; returns how many updates were
    flagged for review."""
    reason = origin.reason
    for spec, digest in plan.insert:
        tool_id = await conn.fetchval(
            """INSERT INTO tools (plugin_id, name, tenant_id, plugin_version, spec, category, is_always_pinned,
                                  pin_weight, schema_version, content_hash, embed_hash, embedding_status)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending') RETURNING id""",
            origin.plugin_id,
            spec.name,
            origin.tenant_id,
            origin.plugin_version,
            spec.model_dump_json(),
            spec.category,
            spec.pinned,
            spec.pin_weight,
            spec.schema_version,
            digest,
            embedding_hash(spec),
        )
        await snapshot_version(conn, tool_id, ["created"], digest, reason)
    flagged = 0
    current = {
        r["id"]: (r["approved"], r["status"])
        for r in await conn.fetch(
            "SELECT id, approved, status FROM tools WHERE id = ANY($1::bigint[])", [u[0] for u in plan.update]
        )
    }
    old_specs = {t.id: t.spec for t in stored.values()}
    for tool_id, spec, digest, fields in plan.update:
        approved, status = current[tool_id]
        review = needs_review(old_specs[tool_id], spec, approved)
        flagged += review
        await conn.execute(
            """UPDATE tools SET spec = $2, tenant_id = $3, plugin_version = $4, category = $5,
                      is_always_pinned = $6, pin_weight = $7, schema_version = $8, content_hash = $9,
                      embedding_status = CASE WHEN embed_hash IS DISTINCT FROM $10 THEN 'stale'
                                              ELSE embedding_status END,
                      embed_hash = $10, review_flag = review_flag OR $11, status = $12, deleted_at = NULL,
                      updated_at = now()
               WHERE id = $1""",
            tool_id,
            spec.model_dump_json(),
            origin.tenant_id,
            origin.plugin_version,
            spec.category,
            spec.pinned,
            spec.pin_weight,
            spec.schema_version,
            digest,
            embedding_hash(spec),
            review,
            status_after_update(status, review, flagged_selectable),
        )
        await snapshot_version(conn, tool_id, fields, digest, reason)
    if plan.delete:
        await conn.execute(
            "UPDATE tools SET deleted_at = now(), updated_at = now() WHERE id = ANY($1::bigint[])", plan.delete
        )
    return flagged


async def _write_categories_and_pages(conn: asyncpg.Connection, sync: PluginSync) -> None:
    """Make the plugin's categories and page mappings exactly what it declared."""
    await conn.executemany(
        """INSERT INTO tool_categories (plugin_id, name, parent, description, workflow_hint) VALUES ($1,$2,$3,$4,$5)
           ON CONFLICT (plugin_id, name) DO UPDATE SET parent = excluded.parent,
             description = excluded.description, workflow_hint = excluded.workflow_hint, updated_at = now()""",
        [(sync.plugin_id, c.name, c.parent, c.description, c.workflow_hint) for c in sync.categories],
    )
    await conn.execute(
        "DELETE FROM tool_categories WHERE plugin_id = $1 AND NOT (name = ANY($2::text[]))",
        sync.plugin_id,
        [c.name for c in sync.categories],
    )
    await conn.execute("DELETE FROM tool_page_mappings WHERE plugin_id = $1", sync.plugin_id)
    await conn.executemany(
        "INSERT INTO tool_page_mappings (plugin_id, page_pattern, category, priority) VALUES ($1,$2,$3,$4)"
        " ON CONFLICT (plugin_id, page_pattern, category) DO UPDATE SET priority = excluded.priority",
        [(sync.plugin_id, m.page_pattern, m.category, m.priority) for m in sync.page_mappings],
    )


async def apply_sync(pool: asyncpg.Pool, sync: PluginSync, *, flagged_selectable: bool) -> SyncReport:
    """Write the declaration in one transaction, serialised per plugin. Embedding is a separate pass."""
    started = time.perf_counter()
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, sync.plugin_id)
        stored = await stored_tools(conn, sync.plugin_id)
        plan = plan_sync(stored, sync.tools)
        origin = Origin(
            sync.plugin_id, sync.tenant_id, sync.plugin_version, f"sync {sync.plugin_id} {sync.plugin_version}"
        )
        flagged = await write_plan(conn, origin, plan, stored, flagged_selectable)
        await _write_categories_and_pages(conn, sync)
    return SyncReport(
        event_id=sync.event_id,
        plugin_id=sync.plugin_id,
        inserted=len(plan.insert),
        updated=len(plan.update),
        unchanged=len(plan.unchanged),
        deleted=len(plan.delete),
        flagged=flagged,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


async def embed_pending(pool: asyncpg.Pool, embedder: Embedder, batch: int = 256) -> int:
    """Re-embed every pending or stale tool, in batches; returns how many were embedded."""
    done = 0
    while True:
        rows = await pool.fetch(
            """SELECT id, spec, embed_hash FROM tools WHERE embedding_status <> 'current' AND deleted_at IS NULL
               ORDER BY id LIMIT $1""",
            batch,
        )
        if not rows:
            return done
        specs = [ToolSpec.model_validate_json(r["spec"]) for r in rows]
        vectors = tool_vectors(specs, embedder)
        # the hash guard keeps a vector computed from a spec that changed meanwhile from being marked current
        await pool.executemany(
            """UPDATE tools SET embedding = $2, embedding_status = 'current', last_embedded_at = now()
               WHERE id = $1 AND embed_hash = $3""",
            [(r["id"], vectors[i], r["embed_hash"]) for i, r in enumerate(rows)],
        )
        done += len(rows)
