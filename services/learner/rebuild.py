"""Replay: posteriors, the credits used and quality counters recomputed from the stored outcomes and feedback.

It runs the very code online learning runs (``outcomes.add_counters``, the store's ``add_ratings``) over the
event history in the order it was applied (each batch in event-id order, as online), so it ends where online
learning ended, discounting included; with other reward settings it re-learns under them. The degradation
state (rolling score, state, quarantine) is left as it is: operators' releases are not events, so it cannot be
derived from the history. The usage memory's examples are keyed by event, so a replay would write the same ones
again: ``toolsel learner --rebuild`` derives what was learnt from them afterwards with ``relearn`` instead.
"""

from dataclasses import dataclass

import asyncpg

from toolsel.services.learner.outcomes import OutcomeRules, add_counters
from toolsel.services.learner.quality import latency_percentile
from toolsel.store import events, learning


@dataclass(frozen=True)
class Rebuilt:
    outcomes: int
    feedback: int
    posteriors: int
    qualities: int
    """(tool, tenant) quality rows: a tool's quality is kept per tenant whose calls it counts."""


async def rebuild(pool: asyncpg.Pool, rules: OutcomeRules, chunk: int = 2000) -> Rebuilt:
    """Recompute ``tool_bandit_stats``, ``session_credits`` and the counters of ``tool_quality`` in one
    transaction.

    Running learners wait on the table locks and add their batches on top: nothing is counted twice or lost.
    """
    async with pool.acquire() as conn, conn.transaction():
        await learning.reset_counters(conn)
        outcomes = 0
        async for rows in events.outcome_history(conn, chunk):
            selections = {r["selection_id"]: r for r in rows}
            tools = await learning.registered(conn, [k for r in rows for k in r["keys"]])
            await add_counters(conn, events.history_events(rows), selections, tools, rules)
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
            qualities=len(histograms),
        )
