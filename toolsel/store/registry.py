"""The tool registry: tools, their versions, categories, page mappings and visibility rules.

The only module that writes these tables (the indexer keeps them true to what plugins declare and what
operators change). Writes that must not interleave with another writer of the same plugin take ``lock_plugin``
inside the caller's transaction.
"""

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeAlias
from uuid import UUID

import asyncpg
import numpy as np

from toolsel.contracts import (
    SHARED_TENANT,
    CategorySpec,
    PageMapping,
    PageMappingSpec,
    PluginSummary,
    RuleFields,
    ToolQuery,
    ToolSpec,
    ToolSummary,
    VisibilityRule,
)

Conn: TypeAlias = asyncpg.Connection | asyncpg.Pool

# tools

SUMMARY_COLUMNS = (
    "plugin_id, name, tenant_id, plugin_version, status, schema_version, embedding_status, last_embedded_at,"
    " review_flag, approved, updated_at, deleted_at"
)
"""The columns of a tool's summary (``ToolSummary``)."""

RESTORED_COLUMNS = (
    "tenant_id",
    "plugin_version",
    "spec",
    "category",
    "is_always_pinned",
    "pin_weight",
    "status",
    "schema_version",
    "content_hash",
    "embed_hash",
    "review_flag",
    "approved",
    "deleted_at",
)
"""Columns a rollback takes from a snapshot; identity, timestamps and the embedding state are the row's own."""

LOCK_PLUGIN = "SELECT pg_advisory_xact_lock(hashtext($1))"

NAMES_LOCK = 7_433_005
"""Advisory lock class of the names syncs add (key: a bucket of their skeletons, ``NAME_BUCKETS`` in all)."""
NAME_BUCKETS = 256
"""Buckets of the names lock (a power of two): a sync of thousands of new names takes this many locks at most."""
LOCK_NAMES = """
SELECT pg_advisory_xact_lock($1, b)
FROM (SELECT DISTINCT hashtext(s) & ($3 - 1) AS b FROM unnest($2::text[]) AS s ORDER BY b) buckets
"""

VISIBLE_NAMES = """
SELECT plugin_id, name FROM tools
WHERE deleted_at IS NULL AND ($3::text[] IS NULL OR tenant_id = ANY($3)) AND NOT (plugin_id = $1 AND tenant_id = $2)
"""
"""The live tools of the catalog a sync's tenant ($2) sees ($3: its tenants; NULL, every tenant's, for a shared
sync, which every tenant sees), less the plugin's ($1) tools of that tenant, which the sync itself declares."""

LAST_SYNC = "SELECT event_id, occurred_at FROM plugin_syncs WHERE plugin_id = $1 AND tenant_id = $2"

RECORD_SYNC = """
INSERT INTO plugin_syncs (plugin_id, tenant_id, event_id, occurred_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (plugin_id, tenant_id) DO UPDATE
SET event_id = excluded.event_id, occurred_at = excluded.occurred_at, applied_at = now()
"""

STORED_TOOLS = (
    "SELECT id, name, tenant_id, content_hash, deleted_at IS NOT NULL AS deleted, spec FROM tools WHERE plugin_id = $1"
)

TOOL_RECORD = f"""
SELECT {SUMMARY_COLUMNS}, id, content_hash, spec, to_jsonb(t) - 'embedding' AS record
FROM tools t WHERE plugin_id = $1 AND name = $2
"""

LIVE_TOOL = (
    "SELECT tenant_id, plugin_version, spec FROM tools WHERE plugin_id = $1 AND name = $2 AND deleted_at IS NULL"
)

TOOL_FILTER = """
WHERE ($1::text IS NULL OR plugin_id = $1) AND ($2::text IS NULL OR status = $2)
  AND ($3::boolean IS NULL OR review_flag = $3) AND ($4 OR deleted_at IS NULL)
  AND ($5::text IS NULL OR strpos(lower(plugin_id || '/' || name), lower($5)) > 0)
"""
"""The admin tool list's filters ($1 plugin, $2 status, $3 review flag, $4 deleted too, $5 text in plugin/name)."""
LIST_TOOLS = f"SELECT {SUMMARY_COLUMNS} FROM tools {TOOL_FILTER} ORDER BY plugin_id, name LIMIT $6 OFFSET $7"
COUNT_TOOLS = f"SELECT count(*) FROM tools {TOOL_FILTER}"

PLUGINS = """
SELECT plugin_id, max(plugin_version) AS plugin_version, count(*) FILTER (WHERE deleted_at IS NULL) AS tools,
       count(*) FILTER (WHERE review_flag AND deleted_at IS NULL) AS flagged,
       count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted, array_agg(DISTINCT tenant_id) AS tenants
FROM tools GROUP BY plugin_id ORDER BY plugin_id
"""

PLUGIN_VERSION = "SELECT coalesce(max(plugin_version), '0.0.0') FROM tools WHERE plugin_id = $1"

REVIEW_STATES = "SELECT id, approved, status FROM tools WHERE id = ANY($1::bigint[])"

INSERT_TOOLS = """
INSERT INTO tools (plugin_id, name, tenant_id, plugin_version, spec, category, is_always_pinned, pin_weight,
                   schema_version, content_hash, embed_hash, embedding_status)
SELECT $1, t.name, $2, $3, t.spec, t.category, t.pinned, t.pin_weight, t.schema_version, t.content_hash,
       t.embed_hash, 'pending'
FROM unnest($4::text[], $5::jsonb[], $6::text[], $7::boolean[], $8::integer[], $9::text[], $10::text[],
            $11::text[]) AS t(name, spec, category, pinned, pin_weight, schema_version, content_hash, embed_hash)
RETURNING id, name
"""

UPDATE_TOOL = """
UPDATE tools SET spec = $2, tenant_id = $3, plugin_version = $4, category = $5, is_always_pinned = $6,
       pin_weight = $7, schema_version = $8, content_hash = $9,
       embedding_status = CASE WHEN embed_hash IS DISTINCT FROM $10 THEN 'stale' ELSE embedding_status END,
       embed_hash = $10, review_flag = review_flag OR $11, status = $12, deleted_at = NULL, updated_at = now()
WHERE id = $1
"""

SOFT_DELETE = "UPDATE tools SET deleted_at = now(), updated_at = now() WHERE id = ANY($1::bigint[])"

APPROVE = """
UPDATE tools t SET approved = true, review_flag = false, status = $2, updated_at = now()
WHERE id = $1 RETURNING to_jsonb(t) - 'embedding' AS record
"""

RESTORE = f"""
UPDATE tools t SET {", ".join(f"{name} = s.{name}" for name in RESTORED_COLUMNS)},
       embedding_status = CASE WHEN t.embed_hash IS DISTINCT FROM s.embed_hash THEN 'stale'
                               ELSE t.embedding_status END,
       updated_at = now()
FROM jsonb_populate_record(NULL::tools, $2::jsonb) s WHERE t.id = $1
"""

# embeddings

TO_EMBED = """
SELECT id, spec, embed_hash FROM tools
WHERE embedding_status <> 'current' AND deleted_at IS NULL AND ($2::text IS NULL OR plugin_id = $2)
ORDER BY id LIMIT $1
"""

# the hash guard keeps a vector computed from a spec that changed meanwhile from being marked current
STORE_VECTOR = """
UPDATE tools SET embedding = $2, embedding_status = 'current', last_embedded_at = now(), updated_at = now()
WHERE id = $1 AND embed_hash = $3
"""

EMBEDDING_AGES = """
SELECT plugin_id, name, embedding_status, last_embedded_at, now() AS now FROM tools
WHERE deleted_at IS NULL AND ($1::text IS NULL OR plugin_id = $1)
"""

MARK_ALL_STALE = """
UPDATE tools SET embedding_status = 'stale'
WHERE deleted_at IS NULL AND ($1::text IS NULL OR plugin_id = $1) AND embedding_status = 'current'
"""

MARK_STALE = "UPDATE tools SET embedding_status = 'stale' WHERE plugin_id = $1 AND name = $2"

FORGET_VECTORS = """
UPDATE tools SET embedding = NULL, embedding_status = 'pending', updated_at = now()
WHERE embedding IS NOT NULL OR embedding_status <> 'pending'
"""

WAITING_FOR_EMBEDDING = """
SELECT count(*) FROM tools
WHERE deleted_at IS NULL AND embedding_status <> 'current' AND ($1::text IS NULL OR plugin_id = $1)
"""

# versions

# a tool appears once per statement: the versions are numbered from what the table held before it
SNAPSHOTS = """
INSERT INTO tool_versions (tool_id, version, snapshot, changed_fields, content_hash, reason)
SELECT t.id, COALESCE((SELECT max(version) FROM tool_versions v WHERE v.tool_id = t.id), 0) + 1,
       to_jsonb(t) - 'embedding', ARRAY(SELECT jsonb_array_elements_text(s.fields)), s.content_hash, $4
FROM unnest($1::bigint[], $2::jsonb[], $3::text[]) AS s(id, fields, content_hash) JOIN tools t ON t.id = s.id
RETURNING version
"""

VERSION_COUNT = "SELECT count(*) FROM tool_versions WHERE tool_id = $1"

LATEST_VERSION = "SELECT max(version) FROM tool_versions WHERE tool_id = $1"

VERSIONS = """
SELECT version, created_at, reason, changed_fields, content_hash, snapshot FROM tool_versions
WHERE tool_id = $1 ORDER BY version
"""

VERSION_SNAPSHOT = "SELECT snapshot FROM tool_versions WHERE tool_id = $1 AND version = $2"

# categories and page mappings

INSERT_CATEGORY = """
INSERT INTO tool_categories (plugin_id, name, parent, description, workflow_hint) VALUES ($1, $2, $3, $4, $5)
"""
UPSERT_CATEGORIES = f"""{INSERT_CATEGORY}
ON CONFLICT (plugin_id, name) DO UPDATE SET parent = excluded.parent, description = excluded.description,
    workflow_hint = excluded.workflow_hint, updated_at = now()
"""

ADD_CATEGORIES = f"{INSERT_CATEGORY} ON CONFLICT (plugin_id, name) DO NOTHING"

DELETE_UNDECLARED_CATEGORIES = "DELETE FROM tool_categories WHERE plugin_id = $1 AND NOT (name = ANY($2::text[]))"

CATEGORY_EXISTS = "SELECT true FROM tool_categories WHERE plugin_id = $1 AND name = $2"
HELD_BY_PLUGIN = """
SELECT (SELECT count(*) FROM tool_categories WHERE plugin_id = $1) AS categories,
       (SELECT count(*) FROM tool_page_mappings WHERE plugin_id = $1) AS page_mappings
"""

CATEGORIES = """
SELECT plugin_id, name, parent, description, workflow_hint FROM tool_categories
WHERE $1::text IS NULL OR plugin_id = $1 ORDER BY plugin_id, name
"""

CATEGORY_PARENTS = "SELECT plugin_id, name, parent FROM tool_categories"

DELETE_PAGE_MAPPINGS = "DELETE FROM tool_page_mappings WHERE plugin_id = $1"

INSERT_PAGE_MAPPING = """
INSERT INTO tool_page_mappings (plugin_id, page_pattern, category, priority)
VALUES ($1, $2, $3, coalesce($4::integer, 0))
"""
UPSERT_PAGE_MAPPING = f"""{INSERT_PAGE_MAPPING}
ON CONFLICT (plugin_id, page_pattern, category) DO UPDATE
SET priority = coalesce($4::integer, tool_page_mappings.priority)
RETURNING priority
"""

ADD_PAGE_MAPPING = f"{INSERT_PAGE_MAPPING} ON CONFLICT (plugin_id, page_pattern, category) DO NOTHING"

PAGE_MAPPINGS = """
SELECT plugin_id, page_pattern, category, priority FROM tool_page_mappings
WHERE ($1::text IS NULL OR plugin_id = $1) AND ($2::text IS NULL OR category = $2)
ORDER BY priority DESC, plugin_id, page_pattern, category
"""

DELETE_PAGE_MAPPING = """
DELETE FROM tool_page_mappings WHERE plugin_id = $1 AND page_pattern = $2 AND category = $3 RETURNING priority
"""

# visibility rules

RULE_COLUMNS = "id, tenant_id, rule_type, effect, target_kind, target, conditions, priority, active, created_at, origin"

RULES = f"""
SELECT {RULE_COLUMNS} FROM tool_visibility_rules
WHERE ($1::text IS NULL OR tenant_id = $1) AND (active OR $2) ORDER BY priority DESC, id
"""

INSERT_RULE = f"""
INSERT INTO tool_visibility_rules (tenant_id, rule_type, effect, target_kind, target, conditions, priority, active)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) RETURNING {RULE_COLUMNS}
"""

UPDATE_RULE = f"""
UPDATE tool_visibility_rules SET tenant_id = $2, rule_type = $3, effect = $4, target_kind = $5, target = $6,
       conditions = $7::jsonb, priority = $8, active = $9
WHERE id = $1 RETURNING {RULE_COLUMNS}
"""

LOCKED_RULE = f"SELECT {RULE_COLUMNS} FROM tool_visibility_rules WHERE id = $1 FOR UPDATE"

DELETE_RULE = f"DELETE FROM tool_visibility_rules WHERE id = $1 RETURNING {RULE_COLUMNS}"

# a tenant's own pins: pin and unpin rules of origin 'tenant', one per tenant and tool

LOCK_TENANT_PINS = "SELECT pg_advisory_xact_lock(17, hashtext($1))"
"""Serialises one tenant's pin writes (a key space of its own, apart from ``LOCK_PLUGIN``'s), so that two at once
never take it past its limit."""

TENANT_CHOICES = """
SELECT target, effect = 'pin' AS pinned, created_at FROM tool_visibility_rules
WHERE origin = 'tenant' AND tenant_id = $1 AND effect IN ('pin', 'unpin') ORDER BY target
"""

SET_TENANT_CHOICE = """
INSERT INTO tool_visibility_rules (tenant_id, rule_type, effect, target_kind, target, origin)
VALUES ($1, 'org', $3, 'tool', $2, 'tenant')
ON CONFLICT (tenant_id, target) WHERE origin = 'tenant' DO UPDATE SET effect = EXCLUDED.effect, created_at = now()
WHERE tool_visibility_rules.effect IN ('pin', 'unpin') AND tool_visibility_rules.effect <> EXCLUDED.effect
RETURNING id
"""
"""A row back when the choice is new or changed; none when it stood already (or the operator made it a rule of
another effect, which stays)."""

CLEAR_TENANT_CHOICE = """
DELETE FROM tool_visibility_rules
WHERE origin = 'tenant' AND tenant_id = $1 AND target = $2 AND effect IN ('pin', 'unpin') RETURNING id
"""

TENANT_TOOL = """
SELECT true FROM tools
WHERE plugin_id = $1 AND name = $2 AND tenant_id IN ($3, '*') AND deleted_at IS NULL
"""

DECLARED_PINS = """
SELECT plugin_id || '/' || name FROM tools
WHERE is_always_pinned AND deleted_at IS NULL AND tenant_id IN ($1, '*') ORDER BY plugin_id, name
"""


async def lock_plugin(conn: asyncpg.Connection, plugin_id: str) -> None:
    """Serialise the writes to one plugin's registry (syncs, operators' writes) until the transaction ends."""
    await conn.execute(LOCK_PLUGIN, plugin_id)


async def lock_names(conn: asyncpg.Connection, skeletons: Sequence[str]) -> None:
    """Serialise, until the transaction ends, the syncs of any plugins that add names of these skeletons, so that
    each sees the names the other added (two plugins adding look-alikes at once would each see neither)."""
    await conn.execute(LOCK_NAMES, NAMES_LOCK, list(skeletons), NAME_BUCKETS)


async def visible_names(conn: Conn, plugin_id: str, tenant_id: str) -> list[tuple[str, str]]:
    """(plugin, name) of every live tool that ``tenant_id`` sees (its own and the shared ones; every tenant's for
    the shared tenant, whose tools every tenant sees) but its sync of ``plugin_id`` does not manage (the plugin's
    tools of that tenant)."""
    tenants = None if tenant_id == SHARED_TENANT else [tenant_id, SHARED_TENANT]
    return [(r["plugin_id"], r["name"]) for r in await conn.fetch(VISIBLE_NAMES, plugin_id, tenant_id, tenants)]


class AppliedSync(NamedTuple):
    event_id: UUID
    occurred_at: datetime


async def last_sync(conn: asyncpg.Connection, plugin_id: str, tenant_id: str) -> AppliedSync | None:
    """The last sync applied for the plugin's tools of this tenant, if any."""
    row = await conn.fetchrow(LAST_SYNC, plugin_id, tenant_id)
    return None if row is None else AppliedSync(row["event_id"], row["occurred_at"])


async def record_sync(conn: asyncpg.Connection, plugin_id: str, tenant_id: str, applied: AppliedSync) -> None:
    """Remember the sync being applied (in its transaction, under the plugin's lock)."""
    await conn.execute(RECORD_SYNC, plugin_id, tenant_id, applied.event_id, applied.occurred_at)


# tools


async def stored_tools(conn: Conn, plugin_id: str) -> list[asyncpg.Record]:
    """Every tool of the plugin, deleted ones too: id, name, tenant_id, content_hash, deleted and spec (JSON text)."""
    rows: list[asyncpg.Record] = await conn.fetch(STORED_TOOLS, plugin_id)
    return rows


async def tool_record(conn: Conn, plugin_id: str, name: str) -> asyncpg.Record | None:
    """The tool's summary columns, id, content hash, spec and whole row as JSON text (``record``, as a
    version snapshot holds it)."""
    return await conn.fetchrow(TOOL_RECORD, plugin_id, name)


async def live_tool(conn: Conn, plugin_id: str, name: str) -> asyncpg.Record | None:
    """Tenant, plugin version and spec of a tool that is not deleted."""
    return await conn.fetchrow(LIVE_TOOL, plugin_id, name)


def summary(row: asyncpg.Record) -> ToolSummary:
    """The ``ToolSummary`` of a row holding (at least) the ``SUMMARY_COLUMNS``."""
    return ToolSummary.model_validate({name: row[name] for name in ToolSummary.model_fields})


async def list_tools(conn: Conn, query: ToolQuery) -> tuple[list[ToolSummary], int]:
    """The page of tools the query's filters keep, by plugin and name, and how many they keep in all."""
    filters = (query.plugin_id, query.status, query.flagged, query.include_deleted, query.search)
    rows = await conn.fetch(LIST_TOOLS, *filters, query.limit, query.offset)
    total: int = await conn.fetchval(COUNT_TOOLS, *filters)
    return [summary(r) for r in rows], total


async def plugins(conn: Conn) -> list[PluginSummary]:
    """Every plugin with tools: its highest version, live, flagged and deleted tools, and tenants."""
    return [PluginSummary.model_validate(dict(r)) for r in await conn.fetch(PLUGINS)]


async def plugin_version(conn: Conn, plugin_id: str) -> str:
    """The highest plugin version recorded with the plugin's tools (0.0.0 for a plugin with none)."""
    version: str = await conn.fetchval(PLUGIN_VERSION, plugin_id)
    return version


async def review_states(conn: Conn, tool_ids: Sequence[int]) -> dict[int, tuple[bool, str]]:
    """Tool id -> (approved, status)."""
    return {r["id"]: (r["approved"], r["status"]) for r in await conn.fetch(REVIEW_STATES, list(tool_ids))}


class ToolRewrite(NamedTuple):
    """A new spec over a stored tool, as ``update_tools`` writes it."""

    tool_id: int
    spec: ToolSpec
    content_hash: str
    embed_hash: str
    flag_review: bool
    status: str


async def insert_tools(
    conn: Conn, plugin_id: str, tenant_id: str, plugin_version: str, tools: Sequence[tuple[ToolSpec, str, str]]
) -> dict[str, int]:
    """New tools waiting for their vectors, from (spec, content hash, embed hash), in one statement; returns
    their ids by name."""
    if not tools:
        return {}
    specs = [spec for spec, _, _ in tools]
    rows = await conn.fetch(
        INSERT_TOOLS,
        plugin_id,
        tenant_id,
        plugin_version,
        [spec.name for spec in specs],
        [spec.model_dump_json() for spec in specs],
        [spec.category for spec in specs],
        [spec.pinned for spec in specs],
        [spec.pin_weight for spec in specs],
        [spec.schema_version for spec in specs],
        [digest for _, digest, _ in tools],
        [embed_hash for _, _, embed_hash in tools],
    )
    return {r["name"]: r["id"] for r in rows}


async def update_tools(conn: Conn, tenant_id: str, plugin_version: str, tools: Sequence[ToolRewrite]) -> None:
    """Write new specs over tools (reviving deleted ones), in one pipelined batch; a vector goes stale when its
    inputs changed."""
    if tools:
        await conn.executemany(
            UPDATE_TOOL,
            [
                (
                    t.tool_id,
                    t.spec.model_dump_json(),
                    tenant_id,
                    plugin_version,
                    t.spec.category,
                    t.spec.pinned,
                    t.spec.pin_weight,
                    t.spec.schema_version,
                    t.content_hash,
                    t.embed_hash,
                    t.flag_review,
                    t.status,
                )
                for t in tools
            ],
        )


async def soft_delete(conn: Conn, tool_ids: Sequence[int]) -> None:
    await conn.execute(SOFT_DELETE, list(tool_ids))


async def approve(conn: Conn, tool_id: int, status: str) -> dict[str, Any]:
    """Mark a tool approved with its review flag cleared; returns the row as it now stands (as a snapshot)."""
    record: dict[str, Any] = json.loads(await conn.fetchval(APPROVE, tool_id, status))
    return record


async def restore(conn: Conn, tool_id: int, values: Mapping[str, Any]) -> None:
    """Write the ``RESTORED_COLUMNS`` of ``values`` (a snapshot's) over the tool."""
    await conn.execute(RESTORE, tool_id, json.dumps(values))


# embeddings


async def tools_to_embed(conn: Conn, limit: int, plugin_id: str | None = None) -> list[asyncpg.Record]:
    """Live tools (of one plugin, or every one) whose vector is pending or stale, by id: id, spec (JSON text) and
    embed_hash."""
    rows: list[asyncpg.Record] = await conn.fetch(TO_EMBED, limit, plugin_id)
    return rows


async def store_vectors(conn: Conn, rows: Sequence[tuple[int, np.ndarray, str]]) -> None:
    """(tool id, vector, the embed_hash it was computed for): a tool whose inputs changed since keeps waiting."""
    await conn.executemany(STORE_VECTOR, rows)


async def embedding_ages(conn: Conn, plugin_id: str | None) -> list[asyncpg.Record]:
    """Live tools' plugin_id, name, embedding_status and last_embedded_at, with the database's ``now``."""
    rows: list[asyncpg.Record] = await conn.fetch(EMBEDDING_AGES, plugin_id)
    return rows


async def mark_all_stale(conn: Conn, plugin_id: str | None) -> None:
    """Every live tool in scope (all plugins for None) waits for a new vector."""
    await conn.execute(MARK_ALL_STALE, plugin_id)


async def mark_stale(conn: Conn, tools: Sequence[tuple[str, str]]) -> None:
    """These (plugin, name) tools wait for a new vector."""
    await conn.executemany(MARK_STALE, tools)


async def forget_vectors(conn: Conn) -> int:
    """Every tool's vector dropped, deleted tools' too, and the live ones waiting for a new one (another model's
    vectors are not comparable with this one's); returns how many tools had one."""
    done: str = await conn.execute(FORGET_VECTORS)
    return int(done.split()[-1])


async def waiting_for_embedding(conn: Conn, plugin_id: str | None) -> int:
    count: int = await conn.fetchval(WAITING_FOR_EMBEDDING, plugin_id)
    return count


# versions


async def snapshot_versions(conn: Conn, tools: Sequence[tuple[int, Sequence[str], str]], reason: str) -> None:
    """Append each tool's row as it now stands to its history, from (tool id, changed fields, content hash), in
    one statement; a tool appears at most once."""
    if tools:
        await conn.execute(SNAPSHOTS, *_snapshot_columns(tools), reason)


async def snapshot_version(conn: Conn, tool_id: int, fields: Sequence[str], digest: str, reason: str) -> int:
    """Append the row as it now stands to its history; returns the new version number."""
    version: int = await conn.fetchval(SNAPSHOTS, *_snapshot_columns([(tool_id, fields, digest)]), reason)
    return version


def _snapshot_columns(tools: Sequence[tuple[int, Sequence[str], str]]) -> tuple[list[int], list[str], list[str]]:
    return [t[0] for t in tools], [json.dumps(list(t[1])) for t in tools], [t[2] for t in tools]


async def version_count(conn: Conn, tool_id: int) -> int:
    count: int = await conn.fetchval(VERSION_COUNT, tool_id)
    return count


async def latest_version(conn: Conn, tool_id: int) -> int:
    version: int = await conn.fetchval(LATEST_VERSION, tool_id)
    return version


async def versions(conn: Conn, tool_id: int) -> list[dict[str, Any]]:
    """The tool's history in version order: version, created_at, reason, changed_fields, content_hash and
    snapshot (as a dict)."""
    return [{**r, "snapshot": json.loads(r["snapshot"])} for r in await conn.fetch(VERSIONS, tool_id)]


async def version_snapshot(conn: Conn, tool_id: int, version: int) -> dict[str, Any] | None:
    """The row as it stood at ``version``, or None when the tool has no such version."""
    snapshot = await conn.fetchval(VERSION_SNAPSHOT, tool_id, version)
    return None if snapshot is None else dict(json.loads(snapshot))


# categories and page mappings


async def replace_categories(
    conn: Conn, plugin_id: str, categories: Sequence[CategorySpec], *, sole_owner: bool = True
) -> None:
    """Make the plugin's categories exactly these; for a sync that is not the ``sole_owner`` of the plugin's live
    tools, only add those it lacks: the others' categories, and the workflow hints their answers carry, stay as
    they are."""
    rows = [(plugin_id, c.name, c.parent, c.description, c.workflow_hint) for c in categories]
    await conn.executemany(UPSERT_CATEGORIES if sole_owner else ADD_CATEGORIES, rows)
    if sole_owner:
        await conn.execute(DELETE_UNDECLARED_CATEGORIES, plugin_id, [c.name for c in categories])


async def described(conn: Conn, plugin_id: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The plugin's categories and page mappings as rows, in a stable order: what a sync compares before and after
    it writes them, to tell the selectors when they changed."""
    return [tuple(r) for r in await conn.fetch(CATEGORIES, plugin_id)], [
        tuple(r) for r in await conn.fetch(PAGE_MAPPINGS, plugin_id, None)
    ]


async def held_by_plugin(conn: Conn, plugin_id: str) -> tuple[int, int]:
    """How many categories and page mappings the plugin holds."""
    row = await conn.fetchrow(HELD_BY_PLUGIN, plugin_id)
    return int(row["categories"]), int(row["page_mappings"])


async def category_exists(conn: Conn, plugin_id: str, name: str) -> bool:
    return bool(await conn.fetchval(CATEGORY_EXISTS, plugin_id, name))


async def categories(conn: Conn, plugin_id: str | None) -> list[asyncpg.Record]:
    """Categories (of one plugin, or all) by plugin and name: plugin_id, name, parent, description, hint."""
    rows: list[asyncpg.Record] = await conn.fetch(CATEGORIES, plugin_id)
    return rows


async def category_parents(conn: Conn) -> dict[tuple[str, str], str | None]:
    """(plugin, category) -> its parent, of every category."""
    return {(r["plugin_id"], r["name"]): r["parent"] for r in await conn.fetch(CATEGORY_PARENTS)}


async def replace_page_mappings(
    conn: Conn, plugin_id: str, mappings: Sequence[PageMappingSpec], *, sole_owner: bool = True
) -> None:
    """Make the plugin's page mappings exactly these; for a sync that is not the ``sole_owner`` of the plugin's
    live tools, only add those it lacks (the others' mappings keep their priorities)."""
    if sole_owner:
        await conn.execute(DELETE_PAGE_MAPPINGS, plugin_id)
    rows = [(plugin_id, m.page_pattern, m.category, m.priority) for m in mappings]
    await conn.executemany(UPSERT_PAGE_MAPPING if sole_owner else ADD_PAGE_MAPPING, rows)


async def page_mappings(conn: Conn, plugin_id: str | None, category: str | None) -> list[PageMapping]:
    """Mappings (of one plugin and category when given), highest priority first."""
    return [PageMapping(**r) for r in await conn.fetch(PAGE_MAPPINGS, plugin_id, category)]


async def upsert_page_mapping(
    conn: Conn, plugin_id: str, page_pattern: str, category: str, priority: int | None
) -> int:
    """Map a page pattern to a category; an existing mapping takes the new priority, or keeps its own when
    ``priority`` is None (a new one gets 0). Returns the priority the mapping has."""
    stored: int = await conn.fetchval(UPSERT_PAGE_MAPPING, plugin_id, page_pattern, category, priority)
    return stored


async def delete_page_mapping(conn: Conn, plugin_id: str, page_pattern: str, category: str) -> int | None:
    """Delete a mapping; returns the priority it had, or None when there was none."""
    priority: int | None = await conn.fetchval(DELETE_PAGE_MAPPING, plugin_id, page_pattern, category)
    return priority


# visibility rules


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


def _rule(row: asyncpg.Record) -> VisibilityRule:
    return VisibilityRule(**{**row, "conditions": json.loads(row["conditions"])})


async def rules(conn: Conn, tenant_id: str | None, include_inactive: bool) -> list[VisibilityRule]:
    """Rules (of one tenant, or all), highest priority first; active ones unless ``include_inactive``."""
    return [_rule(r) for r in await conn.fetch(RULES, tenant_id, include_inactive)]


async def insert_rule(conn: Conn, rule: RuleFields) -> VisibilityRule:
    """The new rule with its id and creation time."""
    return _rule(await conn.fetchrow(INSERT_RULE, *_rule_values(rule)))


async def locked_rule(conn: asyncpg.Connection, rule_id: int) -> VisibilityRule | None:
    """The rule, locked against other writers until the transaction ends; None when there is no such rule."""
    row = await conn.fetchrow(LOCKED_RULE, rule_id)
    return None if row is None else _rule(row)


async def update_rule(conn: Conn, rule_id: int, rule: RuleFields) -> VisibilityRule | None:
    """The rule as it now stands, or None when there is no such rule."""
    row = await conn.fetchrow(UPDATE_RULE, rule_id, *_rule_values(rule))
    return None if row is None else _rule(row)


async def delete_rule(conn: Conn, rule_id: int) -> VisibilityRule | None:
    """The rule deleted, or None when there was no such rule."""
    row = await conn.fetchrow(DELETE_RULE, rule_id)
    return None if row is None else _rule(row)


# a tenant's own pins


async def lock_tenant_pins(conn: asyncpg.Connection, tenant_id: str) -> None:
    """Serialise the writes to one tenant's pins until the transaction ends."""
    await conn.execute(LOCK_TENANT_PINS, tenant_id)


async def tenant_choices(conn: Conn, tenant_id: str) -> list[asyncpg.Record]:
    """The tools the tenant pinned or unpinned for itself, by key: ``target``, ``pinned``, ``created_at``."""
    rows: list[asyncpg.Record] = await conn.fetch(TENANT_CHOICES, tenant_id)
    return rows


async def set_tenant_choice(conn: Conn, tenant_id: str, key: str, pinned: bool) -> bool:
    """Pin (or unpin) tool ``key`` for the tenant; whether that changed its choice."""
    changed = await conn.fetchval(SET_TENANT_CHOICE, tenant_id, key, "pin" if pinned else "unpin")
    return changed is not None


async def clear_tenant_choice(conn: Conn, tenant_id: str, key: str) -> bool:
    """Drop the tenant's choice on tool ``key``; whether there was one."""
    return await conn.fetchval(CLEAR_TENANT_CHOICE, tenant_id, key) is not None


async def tenant_sees(conn: Conn, tenant_id: str, plugin_id: str, name: str) -> bool:
    """Whether the tenant sees a live tool of that name: its own, or a shared one."""
    return await conn.fetchval(TENANT_TOOL, plugin_id, name, tenant_id) is not None


async def declared_pins(conn: Conn, tenant_id: str) -> list[str]:
    """The keys of the live tools the tenant sees that their plugins pin."""
    return [r[0] for r in await conn.fetch(DECLARED_PINS, tenant_id)]
