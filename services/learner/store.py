"""Applying a batch of learning events in one transaction, one statement per table, deduplicated by event id."""

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg
from pydantic import TypeAdapter

from contracts import OutcomeEvent, PosteriorUpdate, SelectionEvent, ToolCall, ToolState, ToolStateChanged
from services.learner.degradation import FRESH_SCORE, Health, Policy, observe
from services.learner.quality import LATENCY_BUCKETS, call_quality, latency_bucket, latency_percentile
from services.learner.quarantine import record_quarantines
from services.learner.reward import rewards_by_key


async def store_selections(pool: asyncpg.Pool, events: Sequence[SelectionEvent]) -> int:
    """Record selection events; a repeated one changes nothing. Returns how many were new."""
    if not events:
        return 0
    rows = await pool.fetch(
        """INSERT INTO selection_events (selection_id, occurred_at, tenant_id, user_id, session_id, query, page,
               tier, role, context_key, method, tools, candidate_count, latency_ms, tokens_selected, tokens_catalog)
           SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
               $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::jsonb[], $13::int[],
               $14::float8[], $15::int[], $16::int[])
           ON CONFLICT (selection_id) DO NOTHING RETURNING selection_id""",
        *map(
            list,
            zip(
                *[
                    (
                        e.selection_id,
                        e.occurred_at,
                        e.tenant_id,
                        e.user_id,
                        e.session_id,
                        e.query,
                        e.page,
                        e.tier,
                        e.role,
                        e.context_key,
                        e.method,
                        json.dumps([t.model_dump(mode="json") for t in e.tools]),
                        e.candidate_count,
                        e.latency_ms,
                        e.tokens_selected,
                        e.tokens_catalog,
                    )
                    for e in events
                ],
                strict=True,
            ),
        ),
    )
    return len(rows)


@dataclass
class OutcomeResult:
    applied: list[UUID] = field(default_factory=list)
    duplicates: list[UUID] = field(default_factory=list)
    unknown_selection: list[UUID] = field(default_factory=list)
    posteriors: list[PosteriorUpdate] = field(default_factory=list)
    transitions: list[ToolStateChanged] = field(default_factory=list)


@dataclass
class _Delta:
    alpha: float = 0.0
    beta: float = 0.0
    selections: int = 0
    successes: int = 0
    failures: int = 0


@dataclass
class _Calls:
    calls: int = 0
    successes: int = 0
    failures: int = 0
    rating_sum: float = 0.0
    rating_count: int = 0
    latency_sum_ms: float = 0.0
    latency_count: int = 0
    latency_hist: list[int] = field(default_factory=lambda: [0] * LATENCY_BUCKETS)
    last_success_at: object = None


SELECTION_KEYS = """
SELECT selection_id, context_key,
       ARRAY(SELECT t ->> 'plugin_id' || '/' || (t ->> 'name') FROM jsonb_array_elements(tools) t) AS keys
FROM selection_events"""
"""A stored selection's context and its tools' ``plugin/name`` keys, unpacked by the database."""

CALL_LIST = TypeAdapter(list[ToolCall])
POSTERIOR_LIST = TypeAdapter(list[PosteriorUpdate])
"""One validation of the whole list (in pydantic's core) instead of a model per row: this is the hot path."""

UPSERT_POSTERIORS = """
INSERT INTO tool_bandit_stats AS s (tool_id, context_key, alpha, beta, selections, successes, failures)
SELECT u.tool_id, u.ctx, $8 + u.da, $9 + u.db, u.n, u.ok, u.ko
FROM unnest($1::bigint[], $2::text[], $3::float8[], $4::float8[], $5::bigint[], $6::bigint[], $7::bigint[])
     AS u(tool_id, ctx, da, db, n, ok, ko)
ON CONFLICT (tool_id, context_key) DO UPDATE SET
    alpha = s.alpha + (excluded.alpha - $8), beta = s.beta + (excluded.beta - $9),
    selections = s.selections + excluded.selections, successes = s.successes + excluded.successes,
    failures = s.failures + excluded.failures, updated_at = now()
RETURNING tool_id, context_key, alpha, beta
"""

UPSERT_QUALITY = """
INSERT INTO tool_quality AS q (tool_id, calls, successes, failures, rating_sum, rating_count, latency_sum_ms,
                               latency_count, latency_hist, last_success_at)
SELECT u.tool_id, u.calls, u.ok, u.ko, u.rs, u.rc, u.ls, u.lc, u.hist::bigint[], u.last
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::float8[], $6::bigint[], $7::float8[],
            $8::bigint[], $9::text[], $10::timestamptz[]) AS u(tool_id, calls, ok, ko, rs, rc, ls, lc, hist, last)
ON CONFLICT (tool_id) DO UPDATE SET
    calls = q.calls + excluded.calls, successes = q.successes + excluded.successes,
    failures = q.failures + excluded.failures, rating_sum = q.rating_sum + excluded.rating_sum,
    rating_count = q.rating_count + excluded.rating_count, latency_sum_ms = q.latency_sum_ms + excluded.latency_sum_ms,
    latency_count = q.latency_count + excluded.latency_count,
    latency_hist = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                         FROM unnest(q.latency_hist, excluded.latency_hist) WITH ORDINALITY AS h(a, b, i) ORDER BY i),
    last_success_at = GREATEST(q.last_success_at, excluded.last_success_at), updated_at = now()
RETURNING tool_id, latency_hist, rolling_score, state, degraded_since, consecutive_degraded, probation_calls
"""

UPDATE_HEALTH = """
UPDATE tool_quality q SET rolling_score = u.score, state = u.state, degraded_since = u.since,
    consecutive_degraded = u.n, probation_calls = u.probation, latency_p50_ms = u.p50, latency_p99_ms = u.p99,
    state_changed_at = CASE WHEN u.changed THEN now() ELSE q.state_changed_at END
FROM unnest($1::bigint[], $2::float8[], $3::text[], $4::timestamptz[], $5::int[], $6::int[], $7::float8[],
            $8::float8[], $9::bool[]) AS u(tool_id, score, state, since, n, probation, p50, p99, changed)
WHERE q.tool_id = u.tool_id
"""


def posterior_deltas(
    events: Sequence[OutcomeEvent], selections: Mapping[UUID, asyncpg.Record], not_called_penalty: float
) -> dict[tuple[str, str], _Delta]:
    """Posterior increments per (tool key, context key), by the reward model, for outcomes of known selections."""
    deltas: dict[tuple[str, str], _Delta] = defaultdict(_Delta)
    for event in events:
        row = selections[event.selection_id]
        context = row["context_key"]
        for key, alpha, beta, success, failure, _ in rewards_by_key(row["keys"], event.calls, not_called_penalty):
            d = deltas[(key, context)]
            d.alpha += alpha
            d.beta += beta
            d.selections += 1
            d.successes += success
            d.failures += failure
    return deltas


def call_counters(events: Sequence[OutcomeEvent], ids: Mapping[str, int]) -> dict[int, _Calls]:
    """Per-tool call counters from the raw calls (every call counts, not only selected tools')."""
    acc: dict[int, _Calls] = defaultdict(_Calls)
    for event in events:
        for call in event.calls:
            tool_id = ids.get(call.key)
            if tool_id is None:
                continue
            c = acc[tool_id]
            c.calls += 1
            if call.success:
                c.successes += 1
                if c.last_success_at is None or event.occurred_at > c.last_success_at:  # type: ignore[operator]
                    c.last_success_at = event.occurred_at
            else:
                c.failures += 1
            if call.rating is not None:
                c.rating_sum += call.rating
                c.rating_count += 1
            if call.latency_ms is not None:
                c.latency_sum_ms += call.latency_ms
                c.latency_count += 1
                c.latency_hist[latency_bucket(call.latency_ms)] += 1
    return acc


async def tool_ids(conn: asyncpg.Connection, keys: Sequence[str]) -> dict[str, int]:
    """Tool id of each ``plugin/name`` key that is registered."""
    return {
        r["key"]: r["id"]
        for r in await conn.fetch(
            "SELECT id, plugin_id || '/' || name AS key FROM tools WHERE plugin_id || '/' || name = ANY($1::text[])",
            sorted(set(keys)),
        )
    }


async def add_counters(
    conn: asyncpg.Connection,
    events: Sequence[OutcomeEvent],
    selections: Mapping[UUID, asyncpg.Record],
    prior_alpha: float,
    prior_beta: float,
    not_called_penalty: float,
) -> tuple[dict[str, int], list[PosteriorUpdate], list[asyncpg.Record]]:
    """Add new outcomes to posteriors and quality counters (rows in id order: concurrent learners lock alike).

    Returns the tool ids, the new posteriors, and the quality rows as they now stand (locked until commit).
    """
    deltas = posterior_deltas(events, selections, not_called_penalty)
    ids = await tool_ids(conn, [key for key, _ in deltas] + [c.key for e in events for c in e.calls])
    names = {v: k for k, v in ids.items()}
    rows = sorted(
        (ids[key], ctx, d.alpha, d.beta, d.selections, d.successes, d.failures)
        for (key, ctx), d in deltas.items()
        if key in ids
    )
    posteriors = []
    if rows:
        updated = await conn.fetch(UPSERT_POSTERIORS, *map(list, zip(*rows, strict=True)), prior_alpha, prior_beta)
        posteriors = POSTERIOR_LIST.validate_python(
            [
                {
                    "plugin_id": names[u["tool_id"]].split("/", 1)[0],
                    "name": names[u["tool_id"]].split("/", 1)[1],
                    "context_key": u["context_key"],
                    "alpha": u["alpha"],
                    "beta": u["beta"],
                }
                for u in updated
            ]
        )
    counters = call_counters(events, ids)
    quality = [
        (
            tool_id,
            c.calls,
            c.successes,
            c.failures,
            c.rating_sum,
            c.rating_count,
            c.latency_sum_ms,
            c.latency_count,
            "{" + ",".join(map(str, c.latency_hist)) + "}",
            c.last_success_at,
        )
        for tool_id, c in sorted(counters.items())
    ]
    standing = await conn.fetch(UPSERT_QUALITY, *map(list, zip(*quality, strict=True))) if quality else []
    return ids, posteriors, standing


def _health(row: asyncpg.Record) -> Health:
    score = row["rolling_score"]
    return Health(
        state=ToolState(row["state"]),
        score=FRESH_SCORE if score is None else score,
        degraded_since=row["degraded_since"],
        consecutive_degraded=row["consecutive_degraded"],
        probation_calls=row["probation_calls"],
    )


async def advance_health(
    conn: asyncpg.Connection,
    events: Sequence[OutcomeEvent],
    ids: Mapping[str, int],
    standing: Sequence[asyncpg.Record],
    policy: Policy,
) -> list[ToolStateChanged]:
    """Run each called tool's degradation state machine over this batch's calls, in order; store the result
    (and a quarantine entry when one tripped) and return the transitions to announce."""
    health = {r["tool_id"]: _health(r) for r in standing}
    changed: set[int] = set()
    transitions: list[ToolStateChanged] = []
    quarantined: dict[int, str] = {}
    for event in events:
        for call in event.calls:
            tool_id = ids.get(call.key)
            if tool_id is None:
                continue
            health[tool_id], transition = observe(health[tool_id], call_quality(call), event.occurred_at, policy)
            if transition is not None:
                changed.add(tool_id)
                transitions.append(
                    ToolStateChanged(
                        plugin_id=call.plugin_id, name=call.name, state=transition.state, reason=transition.reason
                    )
                )
                if transition.state == ToolState.QUARANTINED:
                    quarantined[tool_id] = transition.reason
    rows = []
    for r in standing:
        h = health[r["tool_id"]]
        hist = r["latency_hist"]
        rows.append(
            (
                r["tool_id"],
                h.score,
                h.state.value,
                h.degraded_since,
                h.consecutive_degraded,
                h.probation_calls,
                latency_percentile(hist, 0.5),
                latency_percentile(hist, 0.99),
                r["tool_id"] in changed,
            )
        )
    if rows:
        await conn.execute(UPDATE_HEALTH, *map(list, zip(*rows, strict=True)))
    await record_quarantines(conn, quarantined)
    return transitions


async def apply_outcomes(
    pool: asyncpg.Pool,
    events: Sequence[OutcomeEvent],
    prior_alpha: float,
    prior_beta: float,
    not_called_penalty: float,
    policy: Policy,
) -> OutcomeResult:
    """Store new outcomes and move posteriors, quality and tool health, all in one transaction.

    An outcome whose selection is not stored yet is left out (the caller redelivers it later: events may
    arrive out of order); one already stored is a duplicate and changes nothing.
    """
    result = OutcomeResult()
    unique = list({e.event_id: e for e in events}.values())
    async with pool.acquire() as conn, conn.transaction():
        selections = {
            r["selection_id"]: r
            for r in await conn.fetch(
                SELECTION_KEYS + " WHERE selection_id = ANY($1::uuid[])",
                [e.selection_id for e in unique],
            )
        }
        known = [e for e in unique if e.selection_id in selections]
        result.unknown_selection = [e.event_id for e in unique if e.selection_id not in selections]
        inserted = {
            r["event_id"]
            for r in await conn.fetch(
                """INSERT INTO outcomes (event_id, selection_id, occurred_at, calls)
               SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::jsonb[])
               ON CONFLICT (event_id) DO NOTHING RETURNING event_id""",
                [e.event_id for e in known],
                [e.selection_id for e in known],
                [e.occurred_at for e in known],
                [CALL_LIST.dump_json(e.calls, exclude_none=True).decode() for e in known],
            )
        }
        fresh = [e for e in known if e.event_id in inserted]
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in known if e.event_id not in inserted]
        if not fresh:
            return result
        ids, result.posteriors, standing = await add_counters(
            conn, fresh, selections, prior_alpha, prior_beta, not_called_penalty
        )
        result.transitions = await advance_health(conn, fresh, ids, standing, policy)
    return result
