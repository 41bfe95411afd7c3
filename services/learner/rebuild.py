"""Replay: posteriors and quality counters recomputed from the stored outcomes and feedback.

It runs the very code online learning runs (``outcomes.add_counters``, the store's ``add_ratings``) over the
event history, so it ends where online learning ended; with another reward setting it re-learns under that
model. The degradation state (rolling score, state, quarantine) is left as it is: operators' releases are not
events, so it cannot be derived from the history.
"""

from dataclasses import dataclass

import asyncpg

from services.learner.outcomes import add_counters
from services.learner.quality import latency_percentile
from toolsel.store import events, learning


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
        await learning.reset_counters(conn)
        outcomes = 0
        async for rows in events.outcome_history(conn, chunk):
            await add_counters(
                conn,
                events.history_events(rows),
                {r["selection_id"]: r for r in rows},
                prior_alpha,
                prior_beta,
                not_called_penalty,
            )
            outcomes += len(rows)
        totals = await events.feedback_totals(conn)
        await learning.add_ratings(conn, totals)
        histograms = await learning.latency_histograms(conn)
        await learning.set_percentiles(
            conn,
            {tool: (latency_percentile(h, 0.5), latency_percentile(h, 0.99)) for tool, h in histograms.items()},
        )
        return Rebuilt(
            outcomes=outcomes,
            feedback=sum(n for _, n in totals.values()),
            posteriors=await learning.count_posteriors(conn),
            tools=len(histograms),
        )
