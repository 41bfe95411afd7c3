"""Replay: posteriors and quality counters recomputed from the stored outcomes and feedback.

It runs the very code online learning runs (``store.add_counters``, ``feedback.add_ratings``) over the event
history, so it ends where online learning ended; with another reward setting it re-learns under that model.
The degradation state (rolling score, state, quarantine) is left as it is: operators' releases are not
events, so it cannot be derived from the history.
"""

import json
from dataclasses import dataclass

import asyncpg

from contracts import OutcomeEvent, ToolCall
from services.learner.feedback import add_ratings
from services.learner.quality import latency_percentile
from services.learner.store import SELECTION_KEYS, add_counters

RESET_QUALITY = """
UPDATE tool_quality SET calls = 0, successes = 0, failures = 0, rating_sum = 0, rating_count = 0,
    latency_sum_ms = 0, latency_count = 0, latency_hist = '{}', last_success_at = NULL,
    latency_p50_ms = NULL, latency_p99_ms = NULL, updated_at = now()
"""

HISTORY = f"""
SELECT o.event_id, o.selection_id, o.occurred_at, o.calls, s.context_key, s.keys
FROM outcomes o JOIN ({SELECTION_KEYS}) s USING (selection_id)
ORDER BY o.applied_at, o.event_id
"""


@dataclass(frozen=True)
class Rebuilt:
    outcomes: int
    feedback: int
    posteriors: int
    tools: int


async def rebuild(
    pool: asyncpg.Pool, prior_alpha: float, prior_beta: float, not_called_penalty: float, chunk: int = 2000
) -> Rebuilt:
    """Recompute ``tool_bandit_stats`` and the counters of ``tool_quality`` in one transaction.

    Running learners wait on the table locks and add their batches on top: nothing is counted twice or lost.
    """
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("LOCK TABLE tool_bandit_stats, tool_quality IN EXCLUSIVE MODE")
        await conn.execute("DELETE FROM tool_bandit_stats")
        await conn.execute(RESET_QUALITY)
        outcomes = 0
        cursor = await conn.cursor(HISTORY)
        while rows := await cursor.fetch(chunk):
            events = [
                OutcomeEvent(
                    event_id=r["event_id"],
                    selection_id=r["selection_id"],
                    occurred_at=r["occurred_at"],
                    calls=[ToolCall.model_validate(c) for c in json.loads(r["calls"])],
                )
                for r in rows
            ]
            await add_counters(
                conn, events, {r["selection_id"]: r for r in rows}, prior_alpha, prior_beta, not_called_penalty
            )
            outcomes += len(rows)
        totals = await conn.fetch(
            "SELECT tool_id, sum(rating) AS total, count(*) AS n FROM tool_feedback GROUP BY tool_id"
        )
        await add_ratings(conn, {r["tool_id"]: (r["total"], r["n"]) for r in totals})
        histograms = await conn.fetch("SELECT tool_id, latency_hist FROM tool_quality ORDER BY tool_id")
        await conn.execute(
            "UPDATE tool_quality q SET latency_p50_ms = u.p50, latency_p99_ms = u.p99"
            " FROM unnest($1::bigint[], $2::float8[], $3::float8[]) AS u(tool_id, p50, p99)"
            " WHERE q.tool_id = u.tool_id",
            [r["tool_id"] for r in histograms],
            [latency_percentile(r["latency_hist"], 0.5) for r in histograms],
            [latency_percentile(r["latency_hist"], 0.99) for r in histograms],
        )
        posteriors = await conn.fetchval("SELECT count(*) FROM tool_bandit_stats")
        return Rebuilt(
            outcomes=outcomes, feedback=sum(r["n"] for r in totals), posteriors=posteriors, tools=len(histograms)
        )
