"""The selection pipeline wired to the in-memory catalog: request in, reply and selection event out."""

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import uuid4

import numpy as np

from contracts import (
    ScoreBreakdown,
    ScoredTool,
    SelectedTool,
    SelectionEvent,
    SelectReply,
    SelectRequest,
    TokenEstimate,
)
from services.selector import pipeline as stages
from services.selector.catalog import Catalog
from toolsel.embedder import Embedder
from toolsel.settings import Settings

log = logging.getLogger(__name__)

Posteriors = dict[tuple[str, str], tuple[float, float]]


def context_key(template: str, tier: str, page: str) -> str:
    """Seed 000's bandit context, ``tier:page:general`` by default."""
    return template.format(tier=tier, page=page or "*")


@dataclass
class Selector:
    """Holds what a selection reads (catalog, posteriors, embedder) and answers from memory."""

    settings: Settings
    catalog: Catalog
    embedder: Embedder | None
    posteriors: Posteriors = field(default_factory=dict)
    rng: np.random.Generator = field(default_factory=np.random.default_rng)

    def select(self, request: SelectRequest) -> tuple[SelectReply, SelectionEvent]:
        started = time.perf_counter()
        s, cat = self.settings, self.catalog
        k = request.k or s.default_k
        ctx = context_key(s.context_key_template, request.tier, request.page)
        degraded: list[str] = []
        counts: dict[str, int] = {"catalog": len(cat)}

        mask = stages.tenant_mask(cat.tenants, request.tenant_id) & ~cat.quarantined
        counts["candidates"] = int(mask.sum())
        for ref in request.filters.exclude:
            if (row := cat.rows.get(ref.key)) is not None:
                mask[row] = False
        pinned = np.flatnonzero(mask & cat.pinned)  # pins survive the page and request filters
        mask = self._apply_filters(mask, request)
        counts["filtered"] = int(mask.sum())
        wanted = stages.page_categories(cat.page_mappings, request.page, cat.category_parents)
        if wanted:
            mask, applied = stages.narrow(mask, stages.category_mask(cat.plugin_ids, cat.categories, wanted))
            if not applied:
                degraded.append("page_filter.empty")
        counts["page"] = int(mask.sum())

        similarity = np.zeros(len(cat), dtype=np.float64)
        method = "vector"
        try:
            if self.embedder is None:
                raise RuntimeError("no embedder")
            query = self.embedder.embed_query(request.query)
            similarity = np.where(cat.has_vector, stages.cosine(cat.vectors, query), 0.0).clip(min=0.0)
        except Exception:
            log.exception("query embedding failed")
            degraded.append("retrieval.vectors")
            method = "unranked"
        candidates = stages.top_n(similarity, mask & ~cat.pinned, s.retrieval_candidates)
        counts["retrieved"] = int(candidates.size)

        alpha, beta = self._posterior_arrays(ctx)
        rng = np.random.default_rng(request.seed) if request.seed is not None else self.rng
        mean = stages.posterior_mean(alpha, beta)
        sample = stages.thompson(alpha, beta, rng if s.thompson_sampling else None)
        recency = stages.recency(cat.last_success, datetime.now(UTC), s.recency_half_life_days)
        weights = stages.Weights(s.weight_similarity, s.weight_quality, s.weight_recency)
        score = stages.composite(similarity, cat.rating, recency, mean, weights)
        sampled = stages.composite(similarity, cat.rating, recency, sample, weights)
        if request.filters.min_score is not None:
            candidates = candidates[score[candidates] >= request.filters.min_score]
        chosen, explored = stages.choose(candidates, score, sampled, k, s.exploration_slots)
        final = stages.inject_pins(chosen, pinned, cat.pin_weight)
        counts["returned"] = int(final.size)

        parts = _Parts(similarity, recency, mean, sample, alpha, beta, score)
        tools = [self._scored(int(r), parts, r in explored) for r in final]
        selected_tokens = int(cat.schema_tokens[final].sum())
        visible_tokens = int(cat.schema_tokens[mask].sum())
        hints = {
            c: h for c in {(t.plugin_id, t.category) for t in tools if t.category} if (h := cat.workflow_hints.get(c))
        }
        latency = (time.perf_counter() - started) * 1000
        reply = SelectReply(
            selection_id=uuid4(),
            tools=tools,
            context_key=ctx,
            method=method,
            degraded=degraded,
            candidate_counts=counts,
            workflow_hints={f"{p}/{c}": h for (p, c), h in hints.items()},
            tokens=TokenEstimate(
                selected=selected_tokens, catalog=visible_tokens, saved=max(visible_tokens - selected_tokens, 0)
            ),
            latency_ms=latency,
        )
        event = SelectionEvent(
            selection_id=reply.selection_id,
            tenant_id=request.tenant_id,
            user_id=request.user_id,
            session_id=request.session_id,
            query=request.query,
            page=request.page,
            tier=request.tier,
            role=request.role,
            context_key=ctx,
            method=method,
            tools=[
                SelectedTool(
                    plugin_id=t.plugin_id,
                    name=t.name,
                    rank=i,
                    score=t.score,
                    pinned=t.pinned,
                    exploration=t.exploration,
                )
                for i, t in enumerate(tools)
            ],
            candidate_count=counts["retrieved"],
            latency_ms=latency,
            tokens_selected=selected_tokens,
            tokens_catalog=visible_tokens,
        )
        return reply, event

    def _apply_filters(self, mask: stages.Mask, request: SelectRequest) -> stages.Mask:
        """The request's own filters: plugins, categories and tags."""
        cat, f = self.catalog, request.filters
        if f.plugins:
            mask = mask & np.isin(np.array(cat.plugin_ids), f.plugins)
        if f.categories:
            mask = mask & np.array([c in f.categories for c in cat.categories], dtype=bool)
        if f.tags:
            wanted = set(f.tags)
            mask = mask & np.array([bool(wanted & tags) for tags in cat.tags], dtype=bool)
        return mask

    def _posterior_arrays(self, ctx: str) -> tuple[stages.Scores, stages.Scores]:
        prior = (self.settings.prior_alpha, self.settings.prior_beta)
        pairs = [self.posteriors.get((key, ctx), prior) for key in self.catalog.keys]
        ab = np.array(pairs, dtype=np.float64).reshape(-1, 2)
        return ab[:, 0], ab[:, 1]

    def _scored(self, row: int, parts: "_Parts", exploration: bool) -> ScoredTool:
        cat, spec = self.catalog, self.catalog.specs[row]
        parameters = spec.get("parameters")
        return ScoredTool(
            plugin_id=cat.plugin_ids[row],
            name=cat.names[row],
            display_name=str(spec.get("display_name") or ""),
            description=str(spec.get("description") or ""),
            parameters=parameters if isinstance(parameters, dict) else {},
            category=cat.categories[row],
            score=_r(parts.score[row]),
            pinned=bool(cat.pinned[row]),
            exploration=exploration,
            breakdown=ScoreBreakdown(
                similarity=_r(parts.similarity[row]),
                quality=_r(parts.mean[row] * cat.rating[row]),
                recency=_r(parts.recency[row]),
                thompson=_r(parts.sample[row]),
                alpha=float(parts.alpha[row]),
                beta=float(parts.beta[row]),
                composite=_r(parts.score[row]),
            ),
        )


def _r(value: float) -> float:
    return round(float(value), 6)


@dataclass(frozen=True)
class _Parts:
    """The per-row score components of one request, for the breakdown."""

    similarity: stages.Scores
    recency: stages.Scores
    mean: stages.Scores
    sample: stages.Scores
    alpha: stages.Scores
    beta: stages.Scores
    score: stages.Scores
