"""Rerank: the request's candidate rows scored in its tenant's bandit context: posteriors, the rerank
signals weighed into the composite, its exploring twin fed the Thompson draws, and each row's confidence."""

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.services.selector import confidence, stages
from toolsel.services.selector.confidence import Signals
from toolsel.services.selector.pipeline.candidates import Candidates, best
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.signals.base import RerankContext, Signal
from toolsel.services.selector.signals.quality import QUALITY
from toolsel.services.selector.signals.registry import NEUTRAL, RERANK, RETRIEVAL
from toolsel.services.selector.signals.relevance import RELEVANCE
from toolsel.services.selector.signals.vector import VECTOR

SHOWN_DECIMALS = 6
"""Decimals of the scores a reply shows: enough to order them, short on the wire."""
_EXACT = frozenset({"alpha", "beta"})
"""Breakdown fields given as they are (posterior counts), not rounded."""


@dataclass(frozen=True)
class Scored:
    """The candidate rows' scores (``Candidates.rows``; every array is aligned with them): the composite, its
    exploring twin, and each breakdown field's values for the reply."""

    score: stages.Scores
    explore: stages.Scores
    """The composite with quality fed the Thompson draw instead of the posterior mean."""
    breakdown: dict[str, stages.Scores]
    confidence: stages.Scores
    """The probability that each row is relevant, from its raw retrieval signals."""
    signals: Signals
    """What ``confidence`` was computed from (the fitting script reads them: scripts/fit_confidence.py)."""
    degraded: list[str]

    @property
    def relevance(self) -> stages.Scores:
        return self.breakdown["relevance"]

    def evidence(self, prior_alpha: float, prior_beta: float) -> stages.Scores:
        return stages.evidence(self.breakdown["alpha"], self.breakdown["beta"], prior_alpha, prior_beta)

    def shown(self, at: stages.Rows) -> list[tuple[float, float, dict[str, float]]]:
        """What the reply shows of the rows at these positions: score, confidence and breakdown, as Python floats
        rounded to ``SHOWN_DECIMALS`` except the posterior counts (one matrix rounded and converted, not one value
        at a time)."""
        names = list(self.breakdown)
        exact = [i for i, name in enumerate(names) if name in _EXACT]
        matrix = np.stack([*(self.breakdown[name][at] for name in names), self.score[at], self.confidence[at]])
        shown = np.round(matrix, SHOWN_DECIMALS)
        shown[exact] = matrix[exact]
        columns: list[list[float]] = shown.T.tolist()
        return [(c[-2], c[-1], dict(zip(names, c[:-2], strict=True))) for c in columns]


def run(held: Held, request: SelectRequest, found: Candidates, query_vector: stages.Vector | None) -> Scored:
    rows, per_query = found.rows, found.per_query
    alpha, beta, last_success_s = _posterior(held, request.tenant_id, found.context_key, rows)
    sample = stages.thompson(alpha, beta, held.rng)
    degraded = [] if held.reviews is not None else ["fitness.review_index"]
    relevance = found.relevance
    signal_ctx = RerankContext(
        settings=held.settings,
        request=request,
        catalog=held.catalog,
        standing=held.catalog.standing(request.tenant_id),
        rows=rows,
        relevance=relevance,
        success=stages.posterior_mean(alpha, beta),
        last_success_s=last_success_s,
        vector=query_vector,
        reviews=held.reviews,
        user_history=held.history,
        now_s=time.time(),
    )
    rerank = {name: signal.scores(signal_ctx) for name, signal in RERANK.items()}
    score = _composite(held, rerank)
    drawn = QUALITY.scores(replace(signal_ctx, success=sample))
    breakdown = {
        **{f: best(q.signals[n] for q in per_query) for n, f in _fields(RETRIEVAL)},
        **{f: rerank[n] for n, f in _fields(RERANK)},
        "thompson": sample,
        "alpha": alpha,
        "beta": beta,
        "composite": score,
    }
    signals = Signals(
        breakdown[VECTOR.field],
        best(q.bm25_match for q in per_query),
        found.rank,
        found.lead,
        len(request.query),
    )
    sure = confidence.confidence(signals, len(per_query) > 1, held.settings.confidence_coefficients)
    explore = _composite(held, {**rerank, QUALITY.name: drawn})
    return Scored(score, explore, breakdown, sure, signals, degraded)


def _composite(held: Held, rerank: dict[str, stages.Scores]) -> stages.Scores:
    """Bounded by relevance: the learnt parts lift a tool at most as much as it is relevant."""
    return stages.composite(rerank, held.settings.rerank_weights, NEUTRAL, bound=RELEVANCE.name)


def _posterior(
    held: Held, tenant_id: str, ctx: str, rows: stages.Rows
) -> tuple[stages.Scores, stages.Scores, stages.Scores]:
    """Each of these rows' Beta(alpha, beta) and last success in this tenant's context: the prior and never,
    except for the tools learnt in it."""
    s, cat = held.settings, held.catalog
    alpha = np.full(rows.size, s.prior_alpha)
    beta = np.full(rows.size, s.prior_beta)
    last_success = np.full(rows.size, np.nan)
    learnt = held.posteriors.get((tenant_id, ctx), {})
    found = [(row, p) for key, p in learnt.items() if (row := cat.rows.get(key)) is not None]
    if found:
        at = stages.locate(rows, np.array([row for row, _ in found], dtype=np.int64))
        read = at >= 0  # learnt tools this selection never reads are left out
        alpha[at[read]], beta[at[read]], last_success[at[read]] = np.array([p for _, p in found])[read].T
    return alpha, beta, last_success


def _fields(registry: Mapping[str, Signal[Any]]) -> list[tuple[str, str]]:
    """(signal name, breakdown field) of the signals a breakdown shows."""
    return [(name, signal.field) for name, signal in registry.items() if signal.field is not None]
