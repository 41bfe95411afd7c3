"""Tool records for operators: reads and history, and the writes (approval, rollback, register, update,
soft-delete), each in one transaction serialised per plugin. Register, update and delete go through the sync's
writer; the admin handlers then embed and tell the selectors."""

import json

import asyncpg
from pydantic import ValidationError

from toolsel.contracts import (
    ErrorCode,
    RollbackReport,
    RollbackRequest,
    ToolDetail,
    ToolKey,
    ToolRegister,
    ToolSpec,
    ToolUpdate,
    ToolVersions,
    ToolWriteReport,
)
from toolsel.messaging import RequestError, validation_reply
from toolsel.services.indexer.diff import SyncPlan, plan_sync
from toolsel.services.indexer.review import status_after_approval
from toolsel.services.indexer.sync import Origin, stored_tools, write_plan
from toolsel.services.indexer.versions import plan_rollback, snapshot_diff, version_history
from toolsel.store import registry
from toolsel.store.registry import Conn


async def _record(conn: Conn, plugin_id: str, name: str) -> asyncpg.Record:
    """The tool's row (see ``registry.tool_record``), or a not_found error."""
    row = await registry.tool_record(conn, plugin_id, name)
    if row is None:
        raise RequestError(ErrorCode.NOT_FOUND, f"no tool {plugin_id}/{name}", "name")
    return row


async def check_category(conn: Conn, plugin_id: str, category: str | None, field: str) -> None:
    """A not_found error naming ``field`` unless the plugin declares the category (or there is none)."""
    if category is not None and not await registry.category_exists(conn, plugin_id, category):
        raise RequestError(ErrorCode.NOT_FOUND, f"plugin {plugin_id} has no category {category!r}", field)


# reads


async def show_tool(pool: asyncpg.Pool, key: ToolKey) -> ToolDetail:
    row = await _record(pool, key.plugin_id, key.name)
    return ToolDetail(
        tool=registry.summary(row),
        spec=json.loads(row["spec"]),
        content_hash=row["content_hash"],
        versions=await registry.version_count(pool, row["id"]),
    )


async def tool_versions(pool: asyncpg.Pool, key: ToolKey) -> ToolVersions:
    row = await _record(pool, key.plugin_id, key.name)
    history = version_history(await registry.versions(pool, row["id"]))
    return ToolVersions(plugin_id=key.plugin_id, name=key.name, versions=history)


# approval and rollback


async def approve(pool: asyncpg.Pool, key: ToolKey) -> ToolDetail:
    """Mark the tool approved, clear its review flag and bring a held-back tool into service, as a new version."""
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_plugin(conn, key.plugin_id)
        row = await _record(conn, key.plugin_id, key.name)
        updated = await registry.approve(conn, row["id"], status_after_approval(row["status"]))
        fields = list(snapshot_diff(json.loads(row["record"]), updated))
        if fields:
            await registry.snapshot_version(conn, row["id"], fields, row["content_hash"], "approved")
    return await show_tool(pool, key)


async def rollback(pool: asyncpg.Pool, request: RollbackRequest) -> RollbackReport:
    """Restore the record of one version as a new version; the vector goes stale when its inputs changed."""
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_plugin(conn, request.plugin_id)
        row = await _record(conn, request.plugin_id, request.name)
        target = await registry.version_snapshot(conn, row["id"], request.version)
        if target is None:
            raise RequestError(
                ErrorCode.NOT_FOUND, f"{request.plugin_id}/{request.name} has no version {request.version}", "version"
            )
        plan = plan_rollback(json.loads(row["record"]), target, request.version)
        if plan.changed_fields:
            await registry.restore(conn, row["id"], plan.restore)
            digest = plan.restore["content_hash"]
            version = await registry.snapshot_version(conn, row["id"], plan.changed_fields, digest, plan.reason)
        else:
            version = await registry.latest_version(conn, row["id"])
        tool = registry.summary(await _record(conn, request.plugin_id, request.name))
    return RollbackReport(
        tool=tool, restored_version=request.version, new_version=version, changed_fields=plan.changed_fields
    )


# operators' writes through the sync's writer


async def _apply(conn: asyncpg.Connection, origin: Origin, plan: SyncPlan, flagged_selectable: bool) -> None:
    """Write one tool's plan with the sync's writer (the plan names the tool's stored row when it has one)."""
    ids = {u[0] for u in plan.update} | set(plan.delete) | set(plan.unchanged)
    stored = {name: t for name, t in (await stored_tools(conn, origin.plugin_id)).items() if t.id in ids}
    await write_plan(conn, origin, plan, stored, flagged_selectable)


async def _report(pool: asyncpg.Pool, plugin_id: str, name: str, plan: SyncPlan) -> ToolWriteReport:
    """The tool as it now stands, and the version its insert, update or soft-delete wrote (None: nothing changed)."""
    detail = await show_tool(pool, ToolKey(plugin_id=plugin_id, name=name))
    fields = ["created"] if plan.insert else plan.update[0][3] if plan.update else ["deleted_at"] if plan.delete else []
    return ToolWriteReport(tool=detail.tool, version=detail.versions if fields else None, changed_fields=fields)


async def register_tool(pool: asyncpg.Pool, request: ToolRegister, flagged_selectable: bool) -> ToolWriteReport:
    """Add a tool (or revive a soft-deleted one) as a sync would; a live tool of that name is a conflict."""
    spec = request.tool
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_plugin(conn, request.plugin_id)
        await check_category(conn, request.plugin_id, spec.category, "tool.category")
        current = (await stored_tools(conn, request.plugin_id)).get(spec.name)
        if current is not None and not current.deleted:
            raise RequestError(
                ErrorCode.CONFLICT, f"{request.plugin_id}/{spec.name} exists: update it instead", "tool.name"
            )
        version = request.plugin_version or await registry.plugin_version(conn, request.plugin_id)
        plan = plan_sync({spec.name: current} if current else {}, [spec])
        await _apply(
            conn, Origin(request.plugin_id, request.tenant_id, version, "admin register"), plan, flagged_selectable
        )
    return await _report(pool, request.plugin_id, spec.name, plan)


async def _live(conn: Conn, plugin_id: str, name: str) -> asyncpg.Record:
    row = await registry.live_tool(conn, plugin_id, name)
    if row is None:
        raise RequestError(ErrorCode.NOT_FOUND, f"no live tool {plugin_id}/{name}", "name")
    return row


async def update_tool(pool: asyncpg.Pool, request: ToolUpdate, flagged_selectable: bool) -> ToolWriteReport:
    """Merge the changes into the tool's spec and write it as a sync of that spec would (hash, version,
    re-embedding when its inputs changed, review flag)."""
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_plugin(conn, request.plugin_id)
        row = await _live(conn, request.plugin_id, request.name)
        try:
            spec = ToolSpec.model_validate({**json.loads(row["spec"]), **request.changes})
        except ValidationError as invalid:
            error = validation_reply(invalid).error
            raise RequestError(ErrorCode.INVALID_REQUEST, error.message, f"changes.{error.field}") from invalid
        await check_category(conn, request.plugin_id, spec.category, "changes.category")
        stored = await stored_tools(conn, request.plugin_id)
        plan = plan_sync({spec.name: stored[spec.name]}, [spec])
        origin = Origin(request.plugin_id, row["tenant_id"], row["plugin_version"], "admin update")
        await _apply(conn, origin, plan, flagged_selectable)
    return await _report(pool, request.plugin_id, spec.name, plan)


async def delete_tool(pool: asyncpg.Pool, key: ToolKey) -> ToolWriteReport:
    """Soft-delete a live tool, as a sync that no longer declares it does."""
    async with pool.acquire() as conn, conn.transaction():
        await registry.lock_plugin(conn, key.plugin_id)
        await _live(conn, key.plugin_id, key.name)
        plan = SyncPlan(delete=[(await stored_tools(conn, key.plugin_id))[key.name].id])
        await _apply(conn, Origin(key.plugin_id, "*", "0.0.0", "admin delete"), plan, False)
    return await _report(pool, key.plugin_id, key.name, plan)
