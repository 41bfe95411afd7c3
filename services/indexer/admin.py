"""The admin requests' store side: list and show tools, history, approval, rollback, drift and recompute marks."""

import json
from datetime import datetime
from typing import Any

import asyncpg

from contracts import (
    DriftEntry,
    DriftReport,
    DriftRequest,
    ErrorCode,
    RecomputeRequest,
    RollbackReport,
    RollbackRequest,
    ToolDetail,
    ToolKey,
    ToolList,
    ToolQuery,
    ToolSummary,
    ToolVersions,
)
from services.indexer.drift import days_since, drift_reason
from services.indexer.registry import lock_plugin, snapshot_version
from services.indexer.review import status_after_approval
from services.indexer.versions import RESTORED_COLUMNS, plan_rollback, snapshot_diff, version_history
from toolsel.messaging import RequestError

SUMMARY = (
    "plugin_id, name, tenant_id, plugin_version, status, schema_version, embedding_status, last_embedded_at,"
    " review_flag, approved, updated_at, deleted_at"
)


def _summary(row: asyncpg.Record) -> ToolSummary:
    return ToolSummary.model_validate({name: row[name] for name in ToolSummary.model_fields})


def _not_found(key: ToolKey | RollbackRequest) -> RequestError:
    return RequestError(ErrorCode.NOT_FOUND, f"no tool {key.plugin_id}/{key.name}", "name")


async def _row(conn: asyncpg.Connection | asyncpg.Pool, key: ToolKey | RollbackRequest) -> asyncpg.Record:
    """The tool's summary columns, id, content hash and whole record (as in a snapshot), or a not_found error."""
    row = await conn.fetchrow(
        f"SELECT {SUMMARY}, id, content_hash, spec, to_jsonb(t) - 'embedding' AS record"
        " FROM tools t WHERE plugin_id = $1 AND name = $2",
        key.plugin_id,
        key.name,
    )
    if row is None:
        raise _not_found(key)
    return row


async def list_tools(pool: asyncpg.Pool, query: ToolQuery) -> ToolList:
    rows = await pool.fetch(
        f"""SELECT {SUMMARY} FROM tools
            WHERE ($1::text IS NULL OR plugin_id = $1) AND ($2::text IS NULL OR status = $2)
              AND ($3::boolean IS NULL OR review_flag = $3) AND ($4 OR deleted_at IS NULL)
            ORDER BY plugin_id, name LIMIT $5""",
        query.plugin_id,
        query.status,
        query.flagged,
        query.include_deleted,
        query.limit,
    )
    return ToolList(tools=[_summary(r) for r in rows])


async def show_tool(pool: asyncpg.Pool, key: ToolKey) -> ToolDetail:
    row = await _row(pool, key)
    versions = await pool.fetchval("SELECT count(*) FROM tool_versions WHERE tool_id = $1", row["id"])
    return ToolDetail(
        tool=_summary(row), spec=json.loads(row["spec"]), content_hash=row["content_hash"], versions=versions
    )


async def tool_versions(pool: asyncpg.Pool, key: ToolKey) -> ToolVersions:
    row = await _row(pool, key)
    rows = await pool.fetch(
        "SELECT version, created_at, reason, changed_fields, content_hash, snapshot FROM tool_versions"
        " WHERE tool_id = $1 ORDER BY version",
        row["id"],
    )
    history = version_history([{**r, "snapshot": json.loads(r["snapshot"])} for r in rows])
    return ToolVersions(plugin_id=key.plugin_id, name=key.name, versions=history)


async def approve(pool: asyncpg.Pool, key: ToolKey) -> ToolDetail:
    """Mark the tool approved, clear its review flag and bring a held-back tool into service, as a new version."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, key.plugin_id)
        row = await _row(conn, key)
        updated = await conn.fetchrow(
            """UPDATE tools t SET approved = true, review_flag = false, status = $2, updated_at = now()
               WHERE id = $1 RETURNING to_jsonb(t) - 'embedding' AS record""",
            row["id"],
            status_after_approval(row["status"]),
        )
        fields = list(snapshot_diff(json.loads(row["record"]), json.loads(updated["record"])))
        if fields:
            await snapshot_version(conn, row["id"], fields, row["content_hash"], "approved")
    return await show_tool(pool, key)


async def rollback(pool: asyncpg.Pool, request: RollbackRequest) -> RollbackReport:
    """Restore the record of one version as a new version; the vector goes stale when its inputs changed."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, request.plugin_id)
        row = await _row(conn, request)
        target = await conn.fetchval(
            "SELECT snapshot FROM tool_versions WHERE tool_id = $1 AND version = $2", row["id"], request.version
        )
        if target is None:
            raise RequestError(
                ErrorCode.NOT_FOUND, f"{request.plugin_id}/{request.name} has no version {request.version}", "version"
            )
        plan = plan_rollback(json.loads(row["record"]), json.loads(target), request.version)
        if plan.changed_fields:
            columns = ", ".join(f"{name} = s.{name}" for name in RESTORED_COLUMNS)
            await conn.execute(
                f"""UPDATE tools t SET {columns},
                           embedding_status = CASE WHEN t.embed_hash IS DISTINCT FROM s.embed_hash THEN 'stale'
                                                   ELSE t.embedding_status END,
                           updated_at = now()
                    FROM jsonb_populate_record(NULL::tools, $2::jsonb) s WHERE t.id = $1""",
                row["id"],
                json.dumps(plan.restore),
            )
            version = await snapshot_version(
                conn, row["id"], plan.changed_fields, plan.restore["content_hash"], plan.reason
            )
        else:
            version = await conn.fetchval("SELECT max(version) FROM tool_versions WHERE tool_id = $1", row["id"])
        tool = _summary(await _row(conn, request))
    return RollbackReport(
        tool=tool, restored_version=request.version, new_version=version, changed_fields=plan.changed_fields
    )


async def drift_report(pool: asyncpg.Pool, request: DriftRequest, default_days: float) -> DriftReport:
    """Live tools (any status: a held-back tool needs a fresh vector before it returns) that drifted."""
    days = request.days or default_days
    rows = await pool.fetch(
        """SELECT plugin_id, name, embedding_status, last_embedded_at, now() AS now FROM tools
           WHERE deleted_at IS NULL AND ($1::text IS NULL OR plugin_id = $1)""",
        request.plugin_id,
    )
    entries = [_drift_entry(r, r["now"], days) for r in rows]
    drifted = [e for e in entries if e is not None]
    drifted.sort(key=lambda e: (e.days_since_embed is not None, -(e.days_since_embed or 0.0), e.plugin_id, e.name))
    return DriftReport(days=days, tools=drifted)


def _drift_entry(row: asyncpg.Record, now: datetime, days: float) -> DriftEntry | None:
    reason = drift_reason(row["embedding_status"], row["last_embedded_at"], now, days)
    if reason is None:
        return None
    fields: dict[str, Any] = {name: row[name] for name in ("plugin_id", "name", "embedding_status", "last_embedded_at")}
    return DriftEntry(**fields, days_since_embed=days_since(row["last_embedded_at"], now), reason=reason)


async def mark_for_recompute(pool: asyncpg.Pool, request: RecomputeRequest, drift_days: float) -> int:
    """Mark stale the vectors to recompute (every live one in scope when forced, else those too old); returns how
    many in scope the next embedding pass will take (these plus the missing and stale ones)."""
    if request.force:
        await pool.execute(
            """UPDATE tools SET embedding_status = 'stale'
               WHERE deleted_at IS NULL AND ($1::text IS NULL OR plugin_id = $1) AND embedding_status = 'current'""",
            request.plugin_id,
        )
    else:
        report = await drift_report(pool, DriftRequest(plugin_id=request.plugin_id), drift_days)
        await pool.executemany(
            "UPDATE tools SET embedding_status = 'stale' WHERE plugin_id = $1 AND name = $2",
            [(t.plugin_id, t.name) for t in report.tools if t.reason == "old"],
        )
    waiting: int = await pool.fetchval(
        """SELECT count(*) FROM tools
           WHERE deleted_at IS NULL AND embedding_status <> 'current' AND ($1::text IS NULL OR plugin_id = $1)""",
        request.plugin_id,
    )
    return waiting
