"""The selection pipeline wired to the in-memory state: request in, reply and selection event out.

Every stage is a pure function (``pipeline``, ``policy``, ``retrieval``); this module only orders them and
records which ones degraded. A stage that fails or leaves nothing passes the candidates on unchanged.
"""

import logging
import time
from dataclasses import dataclass, field
from uuid import uuid4

import numpy as np
import numpy.typing as npt

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
from services.selector import retrieval
from services.selector.catalog import Catalog, Posteriors, ReviewIndex
from services.selector.history import UserHistory
from services.selector.policy import Rule, Subject, visible_mask
from toolsel.embedder import Embedder
from toolsel.settings import Settings

log = logging.getLogger(__name__)


def context_key(template: str, tier: str, page: str, intent: str = "general") -> str:
    """Seed 000's bandit context, ``tier:page:general`` by default. ``{intent}`` in the template stands for
    the tool retrieval ranks first (seed 000, 10.3's finer query category): posteriors then learn, per
    apparent intent, which tool the agent really uses."""
    return template.format(tier=tier, page=page or "*", intent=intent)


@dataclass(frozen=True)
class _Signals:
    """The per-row parts of one request's scores, kept for the breakdown."""

    similarity: stages.Scores
    bm25: stages.Scores
    relevance: stages.Scores
    fitness: stages.Scores
    recency: stages.Scores
    popularity: stages.Scores
    user_history: stages.Scores
    mean: stages.Scores
    sample: stages.Scores
    alpha: stages.Scores
    beta: stages.Scores
    score: stages.Scores


@dataclass
class Selector:
    """Holds what a selection reads and answers from memory; the app keeps each part current from events."""

    settings: Settings
    catalog: Catalog
    embedder: Embedder | None
    posteriors: Posteriors = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    reviews: ReviewIndex | None = None
    history: UserHistory = field(default_factory=UserHistory)
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    degraded_sources: set[str] = field(default_factory=set)
    """State that could not be refreshed (e.g. ``store`` while PostgreSQL is down): answers carry on from
    the last copy and say so."""
    _review_rows_for: tuple[Catalog, ReviewIndex] | None = None
    """The copies the cached rows were computed for (held, not their ids: a freed copy's id is reused)."""
    _review_rows_cache: stages.Rows = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def select(self, request: SelectRequest) -> tuple[SelectReply, SelectionEvent]:
        started = time.perf_counter()
        s, cat = self.settings, self.catalog
        k = request.k or s.default_k
        degraded = sorted(self.degraded_sources)
        counts: dict[str, int] = {"catalog": len(cat)}

        mask = stages.tenant_mask(cat.tenants, request.tenant_id) & ~cat.quarantined
        mask &= self._policy(request)
        counts["visible"] = int(mask.sum())
        visible_tokens = int(cat.schema_tokens[mask].sum())  # what the agent would be sent without toolsel
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

        pool = mask & ~cat.pinned if request.rerank else mask
        parts = retrieval.decompose(request.query) if s.decompose_queries else [request.query]
        queries = [request.query, *parts] if len(parts) > 1 else parts
        per_query, method, query_vector = self._retrieve(queries, pool, request.retrieval, degraded)
        relevance = np.max(np.vstack([r for r, _, _ in per_query]), axis=0)
        similarity = np.max(np.vstack([v for _, v, _ in per_query]), axis=0)
        bm25 = np.max(np.vstack([b for _, _, b in per_query]), axis=0)
        rankings = [stages.top_n(r, pool, s.retrieval_candidates) for r, _, _ in per_query]
        candidates = retrieval.round_robin(rankings, s.retrieval_candidates)
        counts["retrieved"] = int(candidates.size)
        if len(queries) > 1:
            method += f"+decomposed({len(parts)})"

        intent = cat.keys[int(candidates[0])] if candidates.size else "none"
        ctx = context_key(s.context_key_template, request.tier, request.page, intent)
        signals = self._signals(request, ctx, relevance, similarity, bm25, query_vector, degraded)
        if not request.rerank:
            final = candidates[:k]
            explored = final[:0]
        else:
            if request.filters.min_score is not None:
                keep = signals.score >= request.filters.min_score
                rankings = [r[keep[r]] for r in rankings]
                candidates = candidates[keep[candidates]]
            sampled = self._score(signals, signals.sample)
            if len(rankings) > 1:  # each need keeps its quota of the slots (seed 002)
                ordered = [r[np.argsort(-signals.score[r], kind="stable")] for r in rankings]
                candidates = retrieval.round_robin(ordered, s.retrieval_candidates)
                exploit_score = -np.arange(len(cat), dtype=np.float64)
                exploit_score[candidates] = -np.arange(candidates.size)
            else:
                exploit_score = signals.score
            chosen, explored = stages.choose(candidates, exploit_score, sampled, k, s.exploration_slots)
            final = stages.inject_pins(chosen, pinned, cat.pin_weight)
        counts["returned"] = int(final.size)
        return self._reply(request, ctx, method, degraded, counts, final, explored, signals, visible_tokens, started)

    def _policy(self, request: SelectRequest) -> stages.Mask:
        who = Subject(request.tenant_id, request.user_id, request.page, request.role, request.tier)
        category_keys = [
            f"{p}/{c}" if c else None for p, c in zip(self.catalog.plugin_ids, self.catalog.categories, strict=True)
        ]
        return visible_mask(self.rules, who, self.catalog.keys, category_keys, self.settings.tier_order)

    def learn(self, tool_key: str, context_key: str, alpha: float, beta: float) -> None:
        """Take in one posterior the learner committed."""
        self.posteriors.setdefault(context_key, {})[tool_key] = (alpha, beta)

    def _review_rows(self) -> stages.Rows:
        """Catalog row of each review-index entry, recomputed only when either copy was replaced."""
        assert self.reviews is not None
        computed_for = self._review_rows_for
        if computed_for is None or computed_for[0] is not self.catalog or computed_for[1] is not self.reviews:
            rows = self.catalog.rows
            self._review_rows_cache = np.array([rows.get(k, -1) for k in self.reviews.keys], dtype=np.int64)
            self._review_rows_for = (self.catalog, self.reviews)
        return self._review_rows_cache

    def _apply_filters(self, mask: stages.Mask, request: SelectRequest) -> stages.Mask:
        """The request's own filters: plugins, servers, categories and tags."""
        cat, f = self.catalog, request.filters
        if f.plugins:
            mask = mask & np.isin(np.array(cat.plugin_ids), f.plugins)
        if f.servers:
            mask = mask & np.array([str(spec.get("server") or "") in f.servers for spec in cat.specs], dtype=bool)
        if f.categories:
            mask = mask & np.array([c in f.categories for c in cat.categories], dtype=bool)
        if f.tags:
            wanted = set(f.tags)
            mask = mask & np.array([bool(wanted & tags) for tags in cat.tags], dtype=bool)
        return mask

    def _retrieve(
        self, queries: list[str], pool: stages.Mask, mode: str, degraded: list[str]
    ) -> tuple[list[tuple[stages.Scores, stages.Scores, stages.Scores]], str, npt.NDArray[np.float32] | None]:
        """(relevance, cosine, bm25) per query, the method used, and the whole query's vector if any."""
        s, cat = self.settings, self.catalog
        zeros = np.zeros(len(cat), dtype=np.float64)
        out = []
        method = mode
        query_vector = None
        for i, query in enumerate(queries):
            bm25 = cat.lexical.scores(query) if mode != "vector" else zeros
            fast = (
                mode == "hybrid"
                and s.bm25_fast_path
                and retrieval.bm25_confidence(bm25, pool, s.bm25_confidence_scale) > s.bm25_confidence_threshold
            )
            cosine = zeros
            vector = None
            if mode != "bm25" and not fast:
                vector = self._embed(query, degraded)
                if vector is not None:
                    cosine = np.where(cat.has_vector, stages.cosine(cat.vectors, vector), 0.0).clip(min=0.0)
                    query_vector = vector if i == 0 else query_vector
                elif mode == "vector":
                    method = "unranked"
            if fast:
                method = "bm25-fast-path"
            history = self._history(vector) if mode == "hybrid" and vector is not None else zeros
            if mode == "bm25" or fast or (mode == "hybrid" and not cosine.any()):
                top = bm25[pool].max() if pool.any() else 0.0
                relevance = bm25 / top if top > 0 else zeros
                if mode == "hybrid" and not fast:
                    method = "bm25"
            elif mode == "vector":
                relevance = cosine
            else:
                signals = [cosine, bm25, history]
                weights = [s.fusion_weight_vector, s.fusion_weight_bm25 * self._bm25_trust(bm25, pool)]
                weights.append(s.fusion_weight_history if history.any() else 0.0)
                if s.fusion == "scores":
                    relevance = retrieval.score_fusion(signals, weights, pool)
                else:
                    lists = [retrieval.ranks(signal, pool) for signal in signals]
                    relevance = retrieval.reciprocal_rank_fusion(lists, weights, s.fusion_rrf_k)
            out.append((relevance, cosine, bm25))
        return out, method, query_vector

    def _bm25_trust(self, bm25: stages.Scores, pool: stages.Mask) -> float:
        """Seed 003's blend: BM25 counts in the fusion as much as its confidence (its tokens matched well);
        a query in other words than the tools' own leaves the ranking to the vectors."""
        if not self.settings.fusion_bm25_by_confidence:
            return 1.0
        return retrieval.bm25_confidence(bm25, pool, self.settings.bm25_confidence_scale)

    def _history(self, vector: npt.NDArray[np.float32]) -> stages.Scores:
        """Tools that helped on past queries near this one (the review index), as a retrieval signal."""
        if self.reviews is None or not len(self.reviews.keys):
            return np.zeros(len(self.catalog), dtype=np.float64)
        return stages.historical_recommendation(self._near_reviews(vector), len(self.catalog))

    def _near_reviews(self, vector: npt.NDArray[np.float32]) -> stages.NearReviews:
        assert self.reviews is not None
        return stages.nearest_reviews(
            self.reviews.centroids,
            self._review_rows(),
            self.reviews.fitness,
            vector,
            self.settings.review_neighbours,
            self.settings.review_min_similarity,
        )

    def _embed(self, query: str, degraded: list[str]) -> npt.NDArray[np.float32] | None:
        if self.embedder is None:
            degraded.append("retrieval.vectors")
            return None
        try:
            return self.embedder.embed_query(query)
        except Exception:
            log.exception("query embedding failed; BM25 alone")
            if "retrieval.vectors" not in degraded:
                degraded.append("retrieval.vectors")
            return None

    def _signals(
        self,
        request: SelectRequest,
        ctx: str,
        relevance: stages.Scores,
        similarity: stages.Scores,
        bm25: stages.Scores,
        query_vector: npt.NDArray[np.float32] | None,
        degraded: list[str],
    ) -> _Signals:
        s, cat = self.settings, self.catalog
        alpha = np.full(len(cat), s.prior_alpha)
        beta = np.full(len(cat), s.prior_beta)
        for key, (a, b) in self.posteriors.get(ctx, {}).items():  # only the tools learnt in this context
            if (row := cat.rows.get(key)) is not None:
                alpha[row], beta[row] = a, b
        mean = stages.posterior_mean(alpha, beta)
        rng = np.random.default_rng(request.seed) if request.seed is not None else self.rng
        sample = stages.thompson(alpha, beta, rng if s.thompson_sampling else None)
        fitness = np.ones(len(cat), dtype=np.float64)
        if self.reviews is None:
            degraded.append("fitness.review_index")
        elif query_vector is not None and len(self.reviews.keys):
            fitness = stages.historical_fitness(self._near_reviews(query_vector), len(cat))
        signals = _Signals(
            similarity=similarity,
            bm25=bm25,
            relevance=relevance,
            fitness=fitness,
            recency=stages.recency(cat.last_success_s, time.time(), s.recency_half_life_days),
            popularity=cat.popularity,
            user_history=self.history.scores(request.user_id, cat.rows, len(cat)),
            mean=mean,
            sample=sample,
            alpha=alpha,
            beta=beta,
            score=np.zeros(len(cat)),
        )
        return _Signals(**{**signals.__dict__, "score": self._score(signals, mean)})

    def _score(self, signals: _Signals, success: stages.Scores) -> stages.Scores:
        s, cat = self.settings, self.catalog
        weights = stages.Weights(s.weight_similarity, s.weight_quality, s.weight_recency)
        base = stages.composite(signals.relevance, cat.rating, signals.recency, success, weights)
        extra: stages.Scores = (
            s.weight_popularity * signals.popularity
            + s.weight_user_history * signals.user_history
            + s.weight_performance * cat.performance
            + s.weight_fitness * (signals.fitness - 1.0)
        )
        return base + extra

    def _reply(
        self,
        request: SelectRequest,
        ctx: str,
        method: str,
        degraded: list[str],
        counts: dict[str, int],
        final: stages.Rows,
        explored: stages.Rows,
        signals: _Signals,
        visible_tokens: int,
        started: float,
    ) -> tuple[SelectReply, SelectionEvent]:
        cat = self.catalog
        tools = [self._scored(int(r), signals, bool(np.isin(r, explored))) for r in final]
        selected_tokens = int(cat.schema_tokens[final].sum())
        hints = {
            f"{t.plugin_id}/{t.category}": hint
            for t in tools
            if t.category and (hint := cat.workflow_hints.get((t.plugin_id, t.category)))
        }
        latency = (time.perf_counter() - started) * 1000
        reply = SelectReply(
            selection_id=uuid4(),
            tools=tools,
            context_key=ctx,
            method=method,
            degraded=degraded,
            candidate_counts=counts,
            workflow_hints=hints,
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

    def _scored(self, row: int, sig: _Signals, exploration: bool) -> ScoredTool:
        cat, spec = self.catalog, self.catalog.specs[row]
        parameters = spec.get("parameters")
        return ScoredTool(
            plugin_id=cat.plugin_ids[row],
            name=cat.names[row],
            display_name=str(spec.get("display_name") or ""),
            description=str(spec.get("description") or ""),
            parameters=parameters if isinstance(parameters, dict) else {},
            category=cat.categories[row],
            score=_r(sig.score[row]),
            pinned=bool(cat.pinned[row]),
            exploration=exploration,
            breakdown=ScoreBreakdown(
                similarity=_r(sig.similarity[row]),
                bm25=_r(sig.bm25[row]),
                relevance=_r(sig.relevance[row]),
                quality=_r(sig.mean[row] * cat.rating[row]),
                recency=_r(sig.recency[row]),
                popularity=_r(sig.popularity[row]),
                user_history=_r(sig.user_history[row]),
                performance=_r(cat.performance[row]),
                fitness=_r(sig.fitness[row]),
                thompson=_r(sig.sample[row]),
                alpha=float(sig.alpha[row]),
                beta=float(sig.beta[row]),
                composite=_r(sig.score[row]),
            ),
        )


def _r(value: float) -> float:
    return round(float(value), 6)
