"""Operators' writes to the registry: tools (through the sync's own plan and writer), page mappings and
visibility rules; and the reads of categories, mappings and rules. The app embeds and tells the selectors."""

import json
from typing import Any

import asyncpg
from pydantic import ValidationError

from contracts import ErrorCode, ToolKey, ToolSpec
from contracts.admin import (
    CategoryQuery,
    CategoryTree,
    PageCategories,
    PageMapping,
    PageMappingList,
    PageMappingQuery,
    PageMappingWrite,
    PageQuery,
    RuleFields,
    RuleList,
    RuleQuery,
    ToolRegister,
    ToolUpdate,
    ToolWriteReport,
    VisibilityRule,
)
from services.indexer.admin import show_tool
from services.indexer.categories import categories_for_page, category_tree
from services.indexer.diff import SyncPlan, plan_sync
from services.indexer.registry import Origin, lock_plugin, stored_tools, write_plan
from toolsel.messaging import RequestError, validation_reply

# tools


async def _check_category(conn: asyncpg.Connection, plugin_id: str, category: str | None, field: str) -> None:
    known = category is None or await conn.fetchval(
        "SELECT true FROM tool_categories WHERE plugin_id = $1 AND name = $2", plugin_id, category
    )
    if not known:
        raise RequestError(ErrorCode.NOT_FOUND, f"plugin {plugin_id} has no category {category!r}", field)


async def _apply(conn: asyncpg.Connection, origin: Origin, plan: SyncPlan, flagged_selectable: bool) -> None:
    """Write one tool's plan with the sync's writer (the plan names the tool's stored row when it has one)."""
    stored = {name: t for name, t in (await stored_tools(conn, origin.plugin_id)).items() if t.id in _ids(plan)}
    await write_plan(conn, origin, plan, stored, flagged_selectable)


def _ids(plan: SyncPlan) -> set[int]:
    return {u[0] for u in plan.update} | set(plan.delete) | set(plan.unchanged)


async def _report(pool: asyncpg.Pool, plugin_id: str, name: str, plan: SyncPlan) -> ToolWriteReport:
    """The tool as it now stands; a version was written for an insert or an update (not for a soft-delete)."""
    detail = await show_tool(pool, ToolKey(plugin_id=plugin_id, name=name))
    fields = ["created"] if plan.insert else plan.update[0][3] if plan.update else ["deleted_at"] if plan.delete else []
    written = bool(plan.insert or plan.update)
    return ToolWriteReport(tool=detail.tool, version=detail.versions if written else None, changed_fields=fields)


async def register_tool(pool: asyncpg.Pool, request: ToolRegister, flagged_selectable: bool) -> ToolWriteReport:
    """Add a tool (or revive a soft-deleted one) as a sync would; a live tool of that name is a conflict."""
    spec = request.tool
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, request.plugin_id)
        await _check_category(conn, request.plugin_id, spec.category, "tool.category")
        stored = await stored_tools(conn, request.plugin_id)
        current = stored.get(spec.name)
        if current is not None and not current.deleted:
            raise RequestError(
                ErrorCode.CONFLICT, f"{request.plugin_id}/{spec.name} exists: update it instead", "tool.name"
            )
        version = request.plugin_version or await conn.fetchval(
            "SELECT coalesce(max(plugin_version), '0.0.0') FROM tools WHERE plugin_id = $1", request.plugin_id
        )
        plan = plan_sync({spec.name: current} if current else {}, [spec])
        origin = Origin(request.plugin_id, request.tenant_id, version, "admin register")
        await _apply(conn, origin, plan, flagged_selectable)
    return await _report(pool, request.plugin_id, spec.name, plan)


async def _live(conn: asyncpg.Connection, plugin_id: str, name: str) -> asyncpg.Record:
    row = await conn.fetchrow(
        "SELECT tenant_id, plugin_version, spec FROM tools WHERE plugin_id = $1 AND name = $2 AND deleted_at IS NULL",
        plugin_id,
        name,
    )
    if row is None:
        raise RequestError(ErrorCode.NOT_FOUND, f"no live tool {plugin_id}/{name}", "name")
    return row


async def update_tool(pool: asyncpg.Pool, request: ToolUpdate, flagged_selectable: bool) -> ToolWriteReport:
    """Merge the changes into the tool's spec and write it as a sync of that spec would (hash, version,
    re-embedding when its inputs changed, review flag)."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, request.plugin_id)
        row = await _live(conn, request.plugin_id, request.name)
        try:
            spec = ToolSpec.model_validate({**json.loads(row["spec"]), **request.changes})
        except ValidationError as invalid:
            error = validation_reply(invalid).error
            raise RequestError(ErrorCode.INVALID_REQUEST, error.message, f"changes.{error.field}") from invalid
        await _check_category(conn, request.plugin_id, spec.category, "changes.category")
        stored = await stored_tools(conn, request.plugin_id)
        plan = plan_sync({spec.name: stored[spec.name]}, [spec])
        origin = Origin(request.plugin_id, row["tenant_id"], row["plugin_version"], "admin update")
        await _apply(conn, origin, plan, flagged_selectable)
    return await _report(pool, request.plugin_id, spec.name, plan)


async def delete_tool(pool: asyncpg.Pool, key: ToolKey) -> ToolWriteReport:
    """Soft-delete a live tool, as a sync that no longer declares it does."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, key.plugin_id)
        await _live(conn, key.plugin_id, key.name)
        plan = SyncPlan(delete=[(await stored_tools(conn, key.plugin_id))[key.name].id])
        await _apply(conn, Origin(key.plugin_id, "*", "0.0.0", "admin delete"), plan, False)
    return await _report(pool, key.plugin_id, key.name, plan)


# categories and page mappings


async def list_categories(pool: asyncpg.Pool, query: CategoryQuery) -> CategoryTree:
    rows = await pool.fetch(
        """SELECT plugin_id, name, parent, description, workflow_hint FROM tool_categories
           WHERE $1::text IS NULL OR plugin_id = $1 ORDER BY plugin_id, name""",
        query.plugin_id,
    )
    return CategoryTree(categories=category_tree(rows))


async def page_categories(pool: asyncpg.Pool, query: PageQuery) -> PageCategories:
    mappings = await pool.fetch("SELECT plugin_id, page_pattern, category, priority FROM tool_page_mappings")
    parents = {(r["plugin_id"], r["name"]): r["parent"] for r in await pool.fetch("SELECT * FROM tool_categories")}
    found = categories_for_page(query.page, [tuple(m) for m in mappings], parents)
    return PageCategories(page=query.page, categories=found)


async def list_page_mappings(pool: asyncpg.Pool, query: PageMappingQuery) -> PageMappingList:
    rows = await pool.fetch(
        """SELECT plugin_id, page_pattern, category, priority FROM tool_page_mappings
           WHERE ($1::text IS NULL OR plugin_id = $1) AND ($2::text IS NULL OR category = $2)
           ORDER BY priority DESC, plugin_id, page_pattern, category""",
        query.plugin_id,
        query.category,
    )
    return PageMappingList(mappings=[PageMapping(**r) for r in rows])


def _mapping(request: PageMappingWrite) -> PageMapping:
    return PageMapping(**request.model_dump(include={"plugin_id", "page_pattern", "category", "priority"}))


async def create_page_mapping(pool: asyncpg.Pool, request: PageMappingWrite) -> PageMapping:
    """Map a page pattern to one of the plugin's categories (an existing mapping takes the new priority)."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, request.plugin_id)
        await _check_category(conn, request.plugin_id, request.category, "category")
        await conn.execute(
            """INSERT INTO tool_page_mappings (plugin_id, page_pattern, category, priority) VALUES ($1, $2, $3, $4)
               ON CONFLICT (plugin_id, page_pattern, category) DO UPDATE SET priority = excluded.priority""",
            request.plugin_id,
            request.page_pattern,
            request.category,
            request.priority,
        )
    return _mapping(request)


async def delete_page_mapping(pool: asyncpg.Pool, request: PageMappingWrite) -> PageMapping:
    async with pool.acquire() as conn, conn.transaction():
        await lock_plugin(conn, request.plugin_id)
        priority = await conn.fetchval(
            """DELETE FROM tool_page_mappings WHERE plugin_id = $1 AND page_pattern = $2 AND category = $3
               RETURNING priority""",
            request.plugin_id,
            request.page_pattern,
            request.category,
        )
    if priority is None:
        raise RequestError(
            ErrorCode.NOT_FOUND, f"no mapping of {request.page_pattern} to {request.category}", "page_pattern"
        )
    return _mapping(request).model_copy(update={"priority": priority})


# visibility rules

RULE_COLUMNS = "id, tenant_id, rule_type, effect, target_kind, target, conditions, priority, active, created_at"


def _rule(row: asyncpg.Record) -> VisibilityRule:
    return VisibilityRule(**{**row, "conditions": json.loads(row["conditions"])})


def _rule_values(rule: RuleFields) -> list[Any]:
    return [
        rule.tenant_id,
        rule.rule_type,
        rule.effect,
        rule.target_kind,
        rule.target,
        json.dumps(rule.conditions),
        rule.priority,
        rule.active,
    ]


def _no_rule(rule_id: int) -> RequestError:
    return RequestError(ErrorCode.NOT_FOUND, f"no visibility rule {rule_id}", "id")


async def list_rules(pool: asyncpg.Pool, query: RuleQuery) -> RuleList:
    rows = await pool.fetch(
        f"""SELECT {RULE_COLUMNS} FROM tool_visibility_rules
            WHERE ($1::text IS NULL OR tenant_id = $1) AND (active OR $2) ORDER BY priority DESC, id""",
        query.tenant_id,
        query.include_inactive,
    )
    return RuleList(rules=[_rule(r) for r in rows])


async def create_rule(pool: asyncpg.Pool, rule: RuleFields) -> VisibilityRule:
    row = await pool.fetchrow(
        f"""INSERT INTO tool_visibility_rules (tenant_id, rule_type, effect, target_kind, target, conditions,
                                               priority, active)
            VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) RETURNING {RULE_COLUMNS}""",
        *_rule_values(rule),
    )
    return _rule(row)


async def update_rule(pool: asyncpg.Pool, rule_id: int, rule: RuleFields) -> VisibilityRule:
    row = await pool.fetchrow(
        f"""UPDATE tool_visibility_rules SET tenant_id = $2, rule_type = $3, effect = $4, target_kind = $5,
                   target = $6, conditions = $7::jsonb, priority = $8, active = $9
            WHERE id = $1 RETURNING {RULE_COLUMNS}""",
        rule_id,
        *_rule_values(rule),
    )
    if row is None:
        raise _no_rule(rule_id)
    return _rule(row)


async def delete_rule(pool: asyncpg.Pool, rule_id: int) -> VisibilityRule:
    row = await pool.fetchrow(f"DELETE FROM tool_visibility_rules WHERE id = $1 RETURNING {RULE_COLUMNS}", rule_id)
    if row is None:
        raise _no_rule(rule_id)
    return _rule(row)
