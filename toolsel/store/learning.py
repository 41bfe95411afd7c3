"""What the learner learnt: posteriors (tool_bandit_stats), quality and health (tool_quality), quarantine, and
the credits that bound one actor's influence (session_credits by its outcomes, review_credits by its reviews).
Quality, health and quarantine are kept per (tool, tenant): the tenant whose selections' calls they count.

The only module that writes these tables. Batches are written with one statement per table over arrays, rows
in key order and tables in one order (``LEARNT_TABLES``) so that concurrent learners, and a rebuild, lock them
alike (no deadlock); the learner's pure logic decides what the rows are. Posteriors and credits are read under
lock and written back (``lock_*`` then ``write_*``): the learner steps them event by event, which no single
update expression can.
"""

from collections.abc import Collection, Mapping, Sequence
from typing import Any, NamedTuple

import asyncpg

Row = tuple[Any, ...]

TOOL_ID = "SELECT id FROM tools WHERE plugin_id = $1 AND name = $2"
TOOL_KEYS = "SELECT id, plugin_id, name FROM tools WHERE id = ANY($1::bigint[])"

TOOLS_BY_KEY = """
SELECT t.id, t.plugin_id || '/' || t.name AS key, t.tenant_id
FROM unnest($1::text[], $2::text[]) AS k(plugin_id, name)
JOIN tools t ON t.plugin_id = k.plugin_id AND t.name = k.name
"""
"""Matched on (plugin_id, name), the registry's unique key, so its index finds each tool (the ``plugin/name`` text
of every tool would be computed and compared instead, over the whole table)."""

LOCK_POSTERIORS = """
INSERT INTO tool_bandit_stats AS s (tool_id, tenant_id, context_key, alpha, beta)
SELECT u.tool_id, u.tenant, u.ctx, $4, $5 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u(tool_id, tenant, ctx)
ON CONFLICT (tool_id, tenant_id, context_key) DO UPDATE SET updated_at = s.updated_at
RETURNING tool_id, tenant_id, context_key, alpha, beta, last_success_at
"""
"""Each row as it stands (a new one at the prior), locked until commit: the no-op update takes the lock."""

WRITE_POSTERIORS = """
UPDATE tool_bandit_stats s SET alpha = u.alpha, beta = u.beta, last_success_at = u.last,
    selections = s.selections + u.n, successes = s.successes + u.ok, failures = s.failures + u.ko, updated_at = now()
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::timestamptz[], $7::bigint[],
            $8::bigint[], $9::bigint[]) AS u(tool_id, tenant, ctx, alpha, beta, last, n, ok, ko)
WHERE s.tool_id = u.tool_id AND s.tenant_id = u.tenant AND s.context_key = u.ctx
RETURNING s.tool_id, s.tenant_id, s.context_key, s.alpha, s.beta, s.last_success_at
"""


class CreditTable(NamedTuple):
    """The named queries of one credits table: lock its rows (a new one at 0), write them back, drop the stale."""

    lock: str
    write: str
    prune: str


def _credit_table(table: str) -> CreditTable:
    """The queries of one of the fixed credits tables below (the name is never a caller's string)."""
    return CreditTable(
        f"""
INSERT INTO {table} AS c (tenant_id, actor, tool_id)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
ON CONFLICT (tenant_id, actor, tool_id) DO UPDATE SET credits = c.credits
RETURNING tenant_id, actor, tool_id, credits
""",
        f"""
UPDATE {table} c SET credits = u.credits, touched_at = now()
FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[]) AS u(tenant, actor, tool_id, credits)
WHERE c.tenant_id = u.tenant AND c.actor = u.actor AND c.tool_id = u.tool_id
""",
        f"""
DELETE FROM {table} WHERE ctid IN (
    SELECT ctid FROM {table} WHERE touched_at < now() - make_interval(secs => $1) FOR UPDATE SKIP LOCKED
)
""",
    )


OUTCOME_CREDITS = _credit_table("session_credits")
"""The successes of each actor's outcomes that counted per tool (a replay recomputes them from the outcomes)."""
FAILURE_CREDITS = _credit_table("failure_credits")
"""The failed calls of each actor that counted per tool (a replay recomputes them from the outcomes)."""
REVIEW_CREDITS = _credit_table("review_credits")
"""The reviews of each actor that taught a tool's usage memory (a replay keeps them: it keeps that memory too)."""
CREDIT_TABLES = (FAILURE_CREDITS, OUTCOME_CREDITS, REVIEW_CREDITS)
"""In ``LEARNT_TABLES`` order."""


async def prune_credits(conn: asyncpg.Connection | asyncpg.Pool, older_than_s: float) -> int:
    """Drop the credits rows untouched for ``older_than_s`` seconds (their actors' windows have passed: never spent
    again), skipping rows a batch holds; returns how many went."""
    dropped = 0
    for table in CREDIT_TABLES:
        status: str = await conn.execute(table.prune, older_than_s)
        dropped += int(status.rsplit(" ", 1)[-1])
    return dropped


ADD_CALLS = """
INSERT INTO tool_quality AS q (tool_id, tenant_id, calls, successes, failures, rating_sum, rating_count,
                               latency_sum_ms, latency_count, latency_hist, last_success_at)
SELECT u.tool_id, u.tenant, u.calls, u.ok, u.ko, u.rs, u.rc, u.ls, u.lc, u.hist::bigint[], u.last
FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::float8[], $7::bigint[],
            $8::float8[], $9::bigint[], $10::text[], $11::timestamptz[])
     AS u(tool_id, tenant, calls, ok, ko, rs, rc, ls, lc, hist, last)
ON CONFLICT (tool_id, tenant_id) DO UPDATE SET
    calls = q.calls + excluded.calls, successes = q.successes + excluded.successes,
    failures = q.failures + excluded.failures, rating_sum = q.rating_sum + excluded.rating_sum,
    rating_count = q.rating_count + excluded.rating_count, latency_sum_ms = q.latency_sum_ms + excluded.latency_sum_ms,
    latency_count = q.latency_count + excluded.latency_count,
    latency_hist = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                         FROM unnest(q.latency_hist, excluded.latency_hist) WITH ORDINALITY AS h(a, b, i) ORDER BY i),
    last_success_at = GREATEST(q.last_success_at, excluded.last_success_at), updated_at = now()
RETURNING tool_id, tenant_id, latency_hist, rolling_score, state, degraded_since, consecutive_degraded,
          probation_calls
"""

ADD_RATINGS = """
INSERT INTO tool_quality AS q (tool_id, tenant_id, rating_sum, rating_count)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::bigint[])
ON CONFLICT (tool_id, tenant_id) DO UPDATE SET rating_sum = q.rating_sum + excluded.rating_sum,
    rating_count = q.rating_count + excluded.rating_count, updated_at = now()
"""

UPDATE_HEALTH = """
UPDATE tool_quality q SET rolling_score = u.score, state = u.state, degraded_since = u.since,
    consecutive_degraded = u.n, probation_calls = u.probation, latency_p50_ms = u.p50, latency_p99_ms = u.p99,
    state_changed_at = CASE WHEN u.changed THEN now() ELSE q.state_changed_at END
FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::text[], $5::timestamptz[], $6::int[], $7::int[],
            $8::float8[], $9::float8[], $10::bool[])
     AS u(tool_id, tenant, score, state, since, n, probation, p50, p99, changed)
WHERE q.tool_id = u.tool_id AND q.tenant_id = u.tenant
"""

LOCK_QUALITY = """
SELECT 1 FROM tool_quality q JOIN unnest($1::bigint[], $2::text[]) AS u(tool_id, tenant)
    ON q.tool_id = u.tool_id AND q.tenant_id = u.tenant
ORDER BY q.tool_id, q.tenant_id FOR UPDATE OF q
"""

ON_PROBATION = """
UPDATE tool_quality q SET state = $3, rolling_score = $4, degraded_since = NULL, consecutive_degraded = 0,
    probation_calls = 0, state_changed_at = now()
FROM unnest($1::bigint[], $2::text[]) AS u(tool_id, tenant)
WHERE q.tool_id = u.tool_id AND q.tenant_id = u.tenant
"""

QUARANTINE = """
INSERT INTO tool_quarantine AS q (tool_id, tenant_id, reason)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])
ON CONFLICT (tool_id, tenant_id) DO UPDATE SET reason = excluded.reason, since = now(), released_at = NULL,
    released_by = NULL,
    strikes = CASE WHEN (q.tool_id, q.tenant_id) IN (SELECT * FROM unnest($4::bigint[], $5::text[]))
                   THEN q.strikes + 1 ELSE 1 END
"""

RELEASE = """
UPDATE tool_quarantine q SET released_at = now(), released_by = $3
FROM unnest($1::bigint[], $2::text[]) AS u(tool_id, tenant)
WHERE q.tool_id = u.tool_id AND q.tenant_id = u.tenant AND q.released_at IS NULL
RETURNING q.tool_id, q.tenant_id
"""

OPEN_QUARANTINES = "SELECT tenant_id FROM tool_quarantine WHERE tool_id = $1 AND released_at IS NULL"
DUE_FOR_RELEASE = """
SELECT tool_id, tenant_id FROM tool_quarantine
WHERE released_at IS NULL AND since <= now() - make_interval(secs => least($1 * power(2, strikes - 1), $2))
"""

LEARNT_TABLES = (
    "failure_credits",
    "session_credits",
    "review_credits",
    "tool_bandit_stats",
    "tool_quality",
    "tool_quarantine",
)
"""The order every transaction takes these tables in: an outcome batch's (``outcomes.add_counters`` locks failure
credits, then session credits, posteriors, quality, and quarantines last). Two transactions that take tables in
one order wait for each other, one after the other; in two orders they deadlock and one is aborted."""
REBUILT_TABLES = frozenset({"failure_credits", "session_credits", "tool_bandit_stats", "tool_quality"})
"""What a rebuild replays the events into."""
LOCK_FOR_REBUILD = f"LOCK TABLE {', '.join(t for t in LEARNT_TABLES if t in REBUILT_TABLES)} IN EXCLUSIVE MODE"
"""In ``LEARNT_TABLES`` order (a list of tables is locked one by one, in its order)."""
LOCK_LEARNT_TEXTS = "LOCK TABLE reviews, review_log, review_index, tool_usage_examples IN SHARE ROW EXCLUSIVE MODE"
"""What a relearning reads and rewrites, held against the learners' writes (and a compaction's), in the order a
review batch first writes them (its reviews, its log, the index, then the usage memory's examples; an outcome batch
writes only the last): one waits for the other, neither deadlocks."""
RESET_POSTERIORS = "DELETE FROM tool_bandit_stats"
RESET_CREDITS = ("DELETE FROM session_credits", "DELETE FROM failure_credits")
RESET_COUNTERS = """
UPDATE tool_quality SET calls = 0, successes = 0, failures = 0, rating_sum = 0, rating_count = 0,
    latency_sum_ms = 0, latency_count = 0, latency_hist = '{}', last_success_at = NULL,
    latency_p50_ms = NULL, latency_p99_ms = NULL, updated_at = now()
"""
LATENCY_HISTOGRAMS = "SELECT tool_id, tenant_id, latency_hist FROM tool_quality ORDER BY tool_id, tenant_id"
SET_PERCENTILES = """
UPDATE tool_quality q SET latency_p50_ms = u.p50, latency_p99_ms = u.p99
FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::float8[]) AS u(tool_id, tenant, p50, p99)
WHERE q.tool_id = u.tool_id AND q.tenant_id = u.tenant
"""
COUNT_POSTERIORS = "SELECT count(*) FROM tool_bandit_stats"


class Registered(NamedTuple):
    id: int
    tenant_id: str


QualityKey = tuple[int, str]
"""(tool id, tenant): whose calls a tool's quality, health and quarantine count."""
PosteriorKey = tuple[int, str, str]
"""(tool id, tenant, context key)."""
CreditKey = tuple[str, str, int]
"""(tenant, actor, tool id)."""


def _columns(rows: Sequence[Row]) -> list[list[Any]]:
    """Rows as one list per column: what ``unnest`` takes."""
    return list(map(list, zip(*rows, strict=True)))


# the registry as the learner sees it (read only)


async def registered(conn: asyncpg.Connection | asyncpg.Pool, keys: Sequence[str]) -> dict[str, Registered]:
    """Id and tenant of each ``plugin/name`` key that is registered: whose selections may teach it. A plugin id
    holds no ``/`` (``ToolRef``), so a key splits at its first."""
    split = (key.partition("/") for key in keys)
    pairs = sorted({(plugin, name) for plugin, slash, name in split if slash})
    rows = await conn.fetch(TOOLS_BY_KEY, [plugin for plugin, _ in pairs], [name for _, name in pairs])
    return {r["key"]: Registered(r["id"], r["tenant_id"]) for r in rows}


async def tool_id(conn: asyncpg.Connection, plugin_id: str, name: str) -> int | None:
    found: int | None = await conn.fetchval(TOOL_ID, plugin_id, name)
    return found


async def tool_keys(conn: asyncpg.Connection, ids: Collection[int]) -> dict[int, tuple[str, str]]:
    """(plugin id, name) of each of these tools."""
    return {r["id"]: (r["plugin_id"], r["name"]) for r in await conn.fetch(TOOL_KEYS, list(ids))}


def _key_columns(keys: Collection[QualityKey]) -> tuple[list[int], list[str]]:
    """(tool ids, tenants) of these keys in key order, two lists even when there are none."""
    ordered = sorted(keys)
    return [t for t, _ in ordered], [tenant for _, tenant in ordered]


# posteriors and quality counters


async def lock_posteriors(
    conn: asyncpg.Connection, keys: Sequence[PosteriorKey], prior_alpha: float, prior_beta: float
) -> dict[PosteriorKey, asyncpg.Record]:
    """These posteriors as they stand (``alpha``, ``beta``, ``last_success_at``; a new one at the prior), locked
    until commit, taken in key order so that concurrent learners lock alike."""
    if not keys:
        return {}
    ordered = sorted(set(keys))
    rows = await conn.fetch(LOCK_POSTERIORS, *_columns(ordered), prior_alpha, prior_beta)
    return {(r["tool_id"], r["tenant_id"], r["context_key"]): r for r in rows}


async def write_posteriors(conn: asyncpg.Connection, rows: Sequence[Row]) -> list[asyncpg.Record]:
    """Set (tool id, tenant, context, alpha, beta, last success) and add (selections, successes, failures) to
    locked posteriors; returns each row's (tool_id, tenant_id, context_key, alpha, beta, last_success_at)."""
    if not rows:
        return []
    result: list[asyncpg.Record] = await conn.fetch(WRITE_POSTERIORS, *_columns(sorted(rows)))
    return result


async def lock_credits(conn: asyncpg.Connection, table: CreditTable, keys: Sequence[CreditKey]) -> dict[CreditKey, int]:
    """Credits already used per (tenant, actor, tool id) in ``table`` (``OUTCOME_CREDITS`` or ``REVIEW_CREDITS``),
    locked until commit, taken in key order so that concurrent learners lock alike (0 for a new actor)."""
    if not keys:
        return {}
    rows = await conn.fetch(table.lock, *_columns(sorted(set(keys))))
    return {(r["tenant_id"], r["actor"], r["tool_id"]): r["credits"] for r in rows}


async def write_credits(
    conn: asyncpg.Connection, table: CreditTable, used: Mapping[CreditKey, int], before: Mapping[CreditKey, int]
) -> None:
    """Store the credits used per (tenant, actor, tool id) that differ from ``before`` (what ``lock_credits``
    returned, rows locked since): a row whose credits were spent before this batch is not written again."""
    changed = sorted((*key, n) for key, n in used.items() if n != before.get(key))
    if changed:
        await conn.execute(table.write, *_columns(changed))


async def add_calls(conn: asyncpg.Connection, rows: Sequence[Row]) -> list[asyncpg.Record]:
    """Add call counters (tool id, calls, successes, failures, rating sum, ratings, latency sum, latencies,
    histogram as array text, last success) to the tools' quality; returns the rows' health columns as they now
    stand, locked until commit."""
    if not rows:
        return []
    result: list[asyncpg.Record] = await conn.fetch(ADD_CALLS, *_columns(rows))
    return result


async def add_ratings(conn: asyncpg.Connection, totals: Mapping[QualityKey, tuple[float, int]]) -> None:
    """Add (sum of ratings, number of ratings) per (tool id, tenant) to the tools' quality, in key order."""
    if totals:
        ordered = sorted(totals.items())
        await conn.execute(
            ADD_RATINGS, *_key_columns(totals), [s for _, (s, _) in ordered], [n for _, (_, n) in ordered]
        )


async def update_health(conn: asyncpg.Connection, rows: Sequence[Row]) -> None:
    """Store (tool id, tenant, rolling score, state, degraded since, consecutive degraded, probation calls, p50,
    p99, state changed) per (tool, tenant)."""
    if rows:
        await conn.execute(UPDATE_HEALTH, *_columns(rows))


# quarantine


async def quarantine(
    conn: asyncpg.Connection, reasons: Mapping[QualityKey, str], again: Collection[QualityKey] = ()
) -> None:
    """Quarantine these tools for these tenants with their reasons (again, when an earlier quarantine was
    released); those in ``again`` failed on probation, so their next release waits twice as long as the last."""
    if reasons:
        ordered = sorted(reasons.items())
        await conn.execute(QUARANTINE, *_key_columns(reasons), [r for _, r in ordered], *_key_columns(again))


async def release(
    conn: asyncpg.Connection, keys: Collection[QualityKey], by: str, state: str, score: float
) -> list[QualityKey]:
    """End these open quarantines and set their health to ``state`` with ``score``; returns those released
    (those that were quarantined). Quality rows are locked first, in key order, as an outcome batch locks them:
    no deadlock with a batch in flight."""
    await conn.execute(LOCK_QUALITY, *_key_columns(keys))
    released = sorted((r["tool_id"], r["tenant_id"]) for r in await conn.fetch(RELEASE, *_key_columns(keys), by))
    if released:
        await conn.execute(ON_PROBATION, *_key_columns(released), state, score)
    return released


async def due_for_release(conn: asyncpg.Connection, after_s: float, max_s: float) -> list[QualityKey]:
    """Unreleased quarantines of ``after_s`` seconds, doubled for each strike after the first (at most
    ``max_s``), or more."""
    return [(r["tool_id"], r["tenant_id"]) for r in await conn.fetch(DUE_FOR_RELEASE, after_s, max_s)]


async def open_quarantines(conn: asyncpg.Connection, tool: int) -> list[QualityKey]:
    """The open quarantines of one tool, one per tenant it is quarantined for."""
    return [(tool, r["tenant_id"]) for r in await conn.fetch(OPEN_QUARANTINES, tool)]


# rebuild


async def lock_learnt_texts(conn: asyncpg.Connection) -> None:
    """Hold the learnt texts and what is derived from them until commit (``LOCK_LEARNT_TEXTS``)."""
    await conn.execute(LOCK_LEARNT_TEXTS)


async def reset_counters(conn: asyncpg.Connection) -> None:
    """Empty the posteriors and the credits used and zero the quality counters (not the health), holding the
    tables until commit: running learners wait and add their batches on top of the rebuilt state."""
    await conn.execute(LOCK_FOR_REBUILD)
    await conn.execute(RESET_POSTERIORS)
    for reset in RESET_CREDITS:
        await conn.execute(reset)
    await conn.execute(RESET_COUNTERS)


async def latency_histograms(conn: asyncpg.Connection) -> dict[QualityKey, list[int]]:
    return {(r["tool_id"], r["tenant_id"]): r["latency_hist"] for r in await conn.fetch(LATENCY_HISTOGRAMS)}


async def set_percentiles(
    conn: asyncpg.Connection, percentiles: Mapping[QualityKey, tuple[float | None, float | None]]
) -> None:
    """Store (p50, p99) latency per (tool id, tenant)."""
    ordered = sorted(percentiles.items())
    await conn.execute(
        SET_PERCENTILES,
        *_key_columns(percentiles),
        [p50 for _, (p50, _) in ordered],
        [p99 for _, (_, p99) in ordered],
    )


async def count_posteriors(conn: asyncpg.Connection) -> int:
    count: int = await conn.fetchval(COUNT_POSTERIORS)
    return count


TENANT_TOOLS = "SELECT id FROM tools WHERE tenant_id = $1 AND plugin_id = ANY($2::text[])"
FORGET_TOOLS = tuple(f"DELETE FROM {table} WHERE tool_id = ANY($1::bigint[])" for table in LEARNT_TABLES)


async def forget_plugins(conn: asyncpg.Connection, tenant_id: str, plugin_ids: Sequence[str]) -> list[int]:
    """Forget what was learnt of a tenant's plugins' tools (posteriors, quality, quarantine, credits), their rows
    kept: ``toolsel demo --reset`` leaves the demo's tenant as it found it. Returns the tools' ids (for the usage
    memory's own ``usage.forget_tools``)."""
    ids: list[int] = [row["id"] for row in await conn.fetch(TENANT_TOOLS, tenant_id, list(plugin_ids))]
    for statement in FORGET_TOOLS:
        await conn.execute(statement, ids)
    return ids
