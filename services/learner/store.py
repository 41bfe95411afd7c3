"""Applying a batch of learning events in one transaction, one statement per table, deduplicated by event id."""

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg

from contracts import OutcomeEvent, PosteriorUpdate, SelectedTool, SelectionEvent
from services.learner.reward import rewards


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


@dataclass
class _Delta:
    alpha: float = 0.0
    beta: float = 0.0
    selections: int = 0
    successes: int = 0
    failures: int = 0


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
                               latency_count, last_success_at)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::float8[], $6::bigint[],
                     $7::float8[], $8::bigint[], $9::timestamptz[])
ON CONFLICT (tool_id) DO UPDATE SET
    calls = q.calls + excluded.calls, successes = q.successes + excluded.successes,
    failures = q.failures + excluded.failures, rating_sum = q.rating_sum + excluded.rating_sum,
    rating_count = q.rating_count + excluded.rating_count, latency_sum_ms = q.latency_sum_ms + excluded.latency_sum_ms,
    latency_count = q.latency_count + excluded.latency_count,
    last_success_at = GREATEST(q.last_success_at, excluded.last_success_at), updated_at = now()
"""


def _quality_rows(events: Sequence[OutcomeEvent], ids: dict[str, int]) -> list[tuple[object, ...]]:
    """Per-tool call counters from the raw calls (every call counts, not only selected tools')."""
    acc: dict[int, list[object]] = {}
    for event in events:
        for call in event.calls:
            tool_id = ids.get(call.key)
            if tool_id is None:
                continue
            row = acc.setdefault(tool_id, [tool_id, 0, 0, 0, 0.0, 0, 0.0, 0, None])
            row[1] += 1  # type: ignore[operator]
            row[2 if call.success else 3] += 1  # type: ignore[operator]
            if call.rating is not None:
                row[4] += call.rating  # type: ignore[operator]
                row[5] += 1  # type: ignore[operator]
            if call.latency_ms is not None:
                row[6] += call.latency_ms  # type: ignore[operator]
                row[7] += 1  # type: ignore[operator]
            if call.success and (row[8] is None or event.occurred_at > row[8]):  # type: ignore[operator]
                row[8] = event.occurred_at
    return [tuple(acc[tool_id]) for tool_id in sorted(acc)]


async def apply_outcomes(
    pool: asyncpg.Pool, events: Sequence[OutcomeEvent], prior_alpha: float, prior_beta: float, not_called_penalty: float
) -> OutcomeResult:
    """Store new outcomes and move posteriors and quality, all in one transaction.

    An outcome whose selection is not stored yet is left out (the caller redelivers it later: events may
    arrive out of order); one already stored is a duplicate and changes nothing.
    """
    result = OutcomeResult()
    unique = list({e.event_id: e for e in events}.values())
    async with pool.acquire() as conn, conn.transaction():
        selections = {
            r["selection_id"]: r
            for r in await conn.fetch(
                "SELECT selection_id, context_key, tools FROM selection_events WHERE selection_id = ANY($1::uuid[])",
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
                [json.dumps([c.model_dump(mode="json") for c in e.calls]) for e in known],
            )
        }
        fresh = [e for e in known if e.event_id in inserted]
        result.applied = [e.event_id for e in fresh]
        result.duplicates = [e.event_id for e in known if e.event_id not in inserted]
        if not fresh:
            return result

        deltas: dict[tuple[str, str], _Delta] = defaultdict(_Delta)
        for event in fresh:
            row = selections[event.selection_id]
            shown = [SelectedTool.model_validate(t) for t in json.loads(row["tools"])]
            for r in rewards(shown, event.calls, not_called_penalty):
                d = deltas[(r.tool_key, row["context_key"])]
                d.alpha += r.alpha
                d.beta += r.beta
                d.selections += 1
                d.successes += r.success
                d.failures += r.failure
        keys = sorted({key for key, _ in deltas} | {c.key for e in fresh for c in e.calls})
        ids = {
            r["key"]: r["id"]
            for r in await conn.fetch(
                "SELECT id, plugin_id || '/' || name AS key FROM tools"
                " WHERE plugin_id || '/' || name = ANY($1::text[])",
                keys,
            )
        }
        names = {v: k for k, v in ids.items()}
        rows = [
            (ids[key], ctx, d.alpha, d.beta, d.selections, d.successes, d.failures)
            for (key, ctx), d in sorted(deltas.items())
            if key in ids
        ]
        if rows:
            updated = await conn.fetch(UPSERT_POSTERIORS, *map(list, zip(*rows, strict=True)), prior_alpha, prior_beta)
            result.posteriors = [
                PosteriorUpdate(
                    plugin_id=names[u["tool_id"]].split("/", 1)[0],
                    name=names[u["tool_id"]].split("/", 1)[1],
                    context_key=u["context_key"],
                    alpha=u["alpha"],
                    beta=u["beta"],
                )
                for u in updated
            ]
        quality = _quality_rows(fresh, ids)
        if quality:
            await conn.execute(UPSERT_QUALITY, *map(list, zip(*quality, strict=True)))
    return result
