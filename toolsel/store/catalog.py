"""The selector's read model: the live registry with its learnt quality, the posteriors, the visibility rules,
the review index and the learnt usage vectors, as the selector loads them into memory.

Read-only: the tables belong to ``registry``, ``learning``, ``reviews`` and ``usage``; these are the selector's
views of them, one named query each.
"""

import asyncpg

STANDING_COLUMNS = """(q.tool_id IS NOT NULL) AS quarantined, tq.rating_sum, tq.rating_count, tq.calls, tq.failures,
       tq.latency_sum_ms, tq.latency_count"""
WITH_STANDING = """
FROM tools t
LEFT JOIN tool_quarantine q ON q.tool_id = t.id AND q.tenant_id = t.tenant_id AND q.released_at IS NULL
LEFT JOIN tool_quality tq ON tq.tool_id = t.id AND tq.tenant_id = t.tenant_id
"""
"""Tools with their base standing: their own tenant's evidence (the owner's for a private tool)."""
IS_LIVE = "t.deleted_at IS NULL AND t.status = 'active'"
LIVE = f"{WITH_STANDING} WHERE {IS_LIVE}"
WRITTEN = "(extract(epoch FROM t.updated_at) * 1000000)::bigint AS written"
"""A tool's last write (an insert, update or soft-delete), in microseconds, as ``CATALOG_VERSION`` counts them."""
TOOL_COLUMNS = f"""t.id, t.plugin_id, t.name, t.tenant_id, t.category, t.spec, t.embedding, t.is_always_pinned,
       t.pin_weight, {WRITTEN}, {STANDING_COLUMNS}"""
LIVE_TOOLS = f"""
SELECT {TOOL_COLUMNS}
{LIVE}
ORDER BY t.pin_weight DESC, t.plugin_id, t.name
"""
TOOLS_WRITTEN_SINCE = f"""
SELECT {TOOL_COLUMNS}, ({IS_LIVE}) AS live
{WITH_STANDING}
WHERE t.updated_at > to_timestamp($1::bigint / 1000000.0) - make_interval(secs => $2)
"""
"""Every tool written after a catalog version (``CATALOG_VERSION``), live or not (a deleted or disabled one leaves
the catalog), with the lookback a late-committing write needs."""
LIVE_WRITES = f"SELECT t.id, t.plugin_id || '/' || t.name AS key, {WRITTEN} FROM tools t WHERE {IS_LIVE}"
"""Each live tool's key and last write, without its declaration, vector or standing: what a copy of the catalog is
checked against."""
LIVE_TOOLS_BY_ID = f"""
SELECT {TOOL_COLUMNS}
{LIVE} AND t.id = ANY($1::bigint[])
"""
BASE_STANDING = f"SELECT t.plugin_id || '/' || t.name AS key, {STANDING_COLUMNS} {LIVE}"
"""The base standing alone, for a reload after a tool's health changed (the registry did not)."""
TENANT_EVIDENCE = f"""
SELECT t.plugin_id || '/' || t.name AS key, tq.tenant_id, {STANDING_COLUMNS}
FROM tool_quality tq JOIN tools t ON t.id = tq.tool_id AND tq.tenant_id <> t.tenant_id
LEFT JOIN tool_quarantine q ON q.tool_id = tq.tool_id AND q.tenant_id = tq.tenant_id AND q.released_at IS NULL
WHERE t.deleted_at IS NULL AND t.status = 'active'
"""
"""Each tenant's own evidence of the live shared tools its selections called."""
CATEGORIES = "SELECT plugin_id, name, parent, workflow_hint FROM tool_categories"
PAGE_MAPPINGS = "SELECT plugin_id, page_pattern, category, priority FROM tool_page_mappings ORDER BY priority DESC"
POSTERIORS = """
SELECT t.plugin_id || '/' || t.name AS key, s.tenant_id, s.context_key, s.alpha, s.beta, s.last_success_at
FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id
"""
POSTERIORS_SINCE = f"""{POSTERIORS}WHERE s.updated_at > now() - make_interval(secs => $1)
"""
"""The posteriors written in the last ``$1`` seconds (every write of one stamps its ``updated_at``)."""
POSTERIOR_COUNT = "SELECT count(*) FROM tool_bandit_stats s JOIN tools t ON t.id = s.tool_id"
"""How many posteriors ``POSTERIORS`` reads."""
USAGE_VECTORS_SINCE = """
SELECT t.plugin_id || '/' || t.name AS key, u.scope, u.centroid, u.negative_centroid, u.positives, u.words,
       u.residual, u.version
FROM tool_usage_vectors u JOIN tools t ON t.id = u.tool_id
WHERE u.version > $1 OR u.updated_at > now() - make_interval(secs => $2)
ORDER BY u.version
"""
USAGE_VECTOR_COUNT = "SELECT count(*) FROM tool_usage_vectors u JOIN tools t ON t.id = u.tool_id"
"""How many usage vectors ``USAGE_VECTORS_SINCE`` reads from version 0."""
ACTIVE_RULES = """
SELECT tenant_id, rule_type, effect, target_kind, target, conditions, priority, origin
FROM tool_visibility_rules WHERE active ORDER BY priority DESC, id
"""
REVIEW_INDEX = """
SELECT t.plugin_id || '/' || t.name AS key, r.scope, r.centroid, r.fitness
FROM review_index r JOIN tools t ON t.id = r.tool_id WHERE t.deleted_at IS NULL
"""
REVIEW_INDEX_VERSION = "SELECT count(*), coalesce(max(id), 0), coalesce(sum(reviews), 0) FROM review_index"
"""An entry added or removed changes the count or the highest id; one merged in place (a review of a near
query) changes the sum of the reviews, which every merge raises."""


async def _fetch(pool: asyncpg.Pool, sql: str) -> list[asyncpg.Record]:
    rows: list[asyncpg.Record] = await pool.fetch(sql)
    return rows


CATALOG_VERSION = "SELECT coalesce((extract(epoch FROM max(updated_at)) * 1000000)::bigint, 0) FROM tools"
"""The registry's version: the microsecond of its latest tool write (an insert, update or soft-delete)."""


async def catalog_version(pool: asyncpg.Pool) -> int:
    """The registry's version now (``CATALOG_VERSION``): a copy of the catalog read after it holds every tool
    write up to it."""
    version: int = await pool.fetchval(CATALOG_VERSION)
    return version


async def live_tools(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Active, not deleted tools, with their own tenant's quarantine flag and call statistics; pinned first."""
    return await _fetch(pool, LIVE_TOOLS)


async def tools_written_since(pool: asyncpg.Pool, version: int, lookback_s: float) -> list[asyncpg.Record]:
    """The tools written after ``version`` (a ``catalog_version``) or in the ``lookback_s`` before it, as
    ``live_tools`` reads them, each with ``live``: whether it is still in the catalog."""
    rows: list[asyncpg.Record] = await pool.fetch(TOOLS_WRITTEN_SINCE, version, lookback_s)
    return rows


async def live_writes(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Each live tool's id, key and last write (``LIVE_WRITES``)."""
    return await _fetch(pool, LIVE_WRITES)


async def live_tools_by_id(pool: asyncpg.Pool, ids: list[int]) -> list[asyncpg.Record]:
    """These tools as ``live_tools`` reads them, those still live."""
    rows: list[asyncpg.Record] = await pool.fetch(LIVE_TOOLS_BY_ID, ids)
    return rows


async def base_standing(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Each live tool's key with its own tenant's quarantine flag and call statistics."""
    return await _fetch(pool, BASE_STANDING)


async def tenant_evidence(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Each tenant's own quarantine, ratings, calls and latencies of the live shared tools it called."""
    return await _fetch(pool, TENANT_EVIDENCE)


async def categories(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Every category with its parent and workflow hint."""
    return await _fetch(pool, CATEGORIES)


async def page_mappings(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Page patterns to categories, highest priority first."""
    return await _fetch(pool, PAGE_MAPPINGS)


async def posteriors(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """The Beta posterior and last success of every tool with learnt statistics, by tenant and context key."""
    return await _fetch(pool, POSTERIORS)


async def posteriors_since(pool: asyncpg.Pool, seconds: float) -> list[asyncpg.Record]:
    """The posteriors written in the last ``seconds``, as ``posteriors`` reads them."""
    rows: list[asyncpg.Record] = await pool.fetch(POSTERIORS_SINCE, seconds)
    return rows


async def posterior_count(pool: asyncpg.Pool) -> int:
    """How many posteriors ``posteriors`` would read."""
    count: int = await pool.fetchval(POSTERIOR_COUNT)
    return count


async def usage_vectors_since(pool: asyncpg.Pool, version: int, lookback_s: float = 0.0) -> list[asyncpg.Record]:
    """The usage vectors written after ``version`` (the caller's watermark), oldest first; with ``lookback_s``
    also those updated in that many last seconds, which a transaction that took its version before a
    later one committed first would otherwise hide below the watermark."""
    rows: list[asyncpg.Record] = await pool.fetch(USAGE_VECTORS_SINCE, version, lookback_s)
    return rows


async def usage_vector_count(pool: asyncpg.Pool) -> int:
    """How many usage vectors ``usage_vectors_since(pool, 0)`` would read."""
    count: int = await pool.fetchval(USAGE_VECTOR_COUNT)
    return count


async def active_rules(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Active visibility rules, highest priority first."""
    return await _fetch(pool, ACTIVE_RULES)


async def review_index(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    """Every review-index entry of a live tool: its tool's key, scope, centroid and fitness."""
    return await _fetch(pool, REVIEW_INDEX)


async def review_index_version(pool: asyncpg.Pool) -> tuple[int, int, int]:
    """(entries, highest id, reviews): changes whenever the index does, read far more cheaply than the index."""
    row = await pool.fetchrow(REVIEW_INDEX_VERSION)
    return int(row[0]), int(row[1]), int(row[2])
