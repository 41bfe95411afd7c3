"""Outcomes into posteriors, quality counters and tool health: a batch in one transaction, deduplicated by
event id. What each row becomes is computed here (pure); the store writes it."""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
from pydantic import TypeAdapter

from contracts import OutcomeEvent, PosteriorUpdate, ToolState, ToolStateChanged
from services.learner.degradation import FRESH_SCORE, DegradationPolicy, Health, observe
from services.learner.quality import LATENCY_BUCKETS, call_quality, latency_bucket, latency_percentile
from services.learner.reward import rewards_by_key
from toolsel.store import events, learning

POSTERIOR_LIST = TypeAdapter(list[PosteriorUpdate])
"""One validation of the whole list (in pydantic's core) instead of a model per row: this is the hot path."""


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
    last_success_at: datetime | None = None


def posterior_deltas(
    events: Sequence[OutcomeEvent], selections: Mapping[UUID, Mapping[str, Any]], not_called_penalty: float
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
                if c.last_success_at is None or event.occurred_at > c.last_success_at:
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


async def add_counters(
    conn: asyncpg.Connection,
    events: Sequence[OutcomeEvent],
    selections: Mapping[UUID, Mapping[str, Any]],
    prior_alpha: float,
    prior_beta: float,
    not_called_penalty: float,
) -> tuple[dict[str, int], list[PosteriorUpdate], list[asyncpg.Record]]:
    """Add new outcomes to posteriors and quality counters (rows in id order: concurrent learners lock alike).

    Returns the tool ids, the new posteriors, and the quality rows as they now stand (locked until commit).
    """
    deltas = posterior_deltas(events, selections, not_called_penalty)
    ids = await learning.tool_ids(conn, [key for key, _ in deltas] + [c.key for e in events for c in e.calls])
    names = {v: k for k, v in ids.items()}
    rows = sorted(
        (ids[key], ctx, d.alpha, d.beta, d.selections, d.successes, d.failures)
        for (key, ctx), d in deltas.items()
        if key in ids
    )
    updated = await learning.upsert_posteriors(conn, rows, prior_alpha, prior_beta)
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
        for tool_id, c in sorted(call_counters(events, ids).items())
    ]
    return ids, posteriors, await learning.add_calls(conn, quality)


def _health(row: Mapping[str, Any]) -> Health:
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
    standing: Sequence[Mapping[str, Any]],
    policy: DegradationPolicy,
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
    await learning.update_health(conn, rows)
    await learning.quarantine(conn, quarantined)
    return transitions


async def apply_outcomes(
    pool: asyncpg.Pool,
    batch: Sequence[OutcomeEvent],
    prior_alpha: float,
    prior_beta: float,
    not_called_penalty: float,
    policy: DegradationPolicy,
) -> OutcomeResult:
    """Store new outcomes and move posteriors, quality and tool health, all in one transaction.

    An outcome whose selection is not stored yet is left out (the caller redelivers it later: events may
    arrive out of order); one already stored is a duplicate and changes nothing.
    """
    result = OutcomeResult()
    unique = list({e.event_id: e for e in batch}.values())
    async with pool.acquire() as conn, conn.transaction():
        selections = await events.selection_keys(conn, [e.selection_id for e in unique])
        known = [e for e in unique if e.selection_id in selections]
        result.unknown_selection = [e.event_id for e in unique if e.selection_id not in selections]
        inserted = await events.insert_outcomes(conn, known)
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
