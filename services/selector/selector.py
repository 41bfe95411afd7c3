"""The selector: the stages wired to the in-memory state, request in, reply and selection event out.

Every stage is a pure function (``stages``, ``policy``, ``retrieval``) and every score a signal
(``signals``); this module only orders them and records which ones degraded. A stage that fails or leaves
nothing passes the candidates on unchanged.
"""

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import reduce
from typing import Any
from uuid import uuid4

import numpy as np

from toolsel.contracts import (
    SelectionEvent,
    SelectReply,
    SelectRequest,
)
from toolsel.embedder import Embedder
from toolsel.services.selector import confidence, fusion, retrieval, stages
from toolsel.services.selector.catalog import Catalog, Posteriors, ReviewIndex, posterior
from toolsel.services.selector.confidence import Signals
from toolsel.services.selector.history import UserHistory
from toolsel.services.selector.policy import Rule, Subject, visible_mask
from toolsel.services.selector.retrieval_cache import RetrievalCache, freeze, pool_digest
from toolsel.services.selector.signals.base import QueryContext, RerankContext, ReviewLookup, Signal
from toolsel.services.selector.signals.bm25 import BM25
from toolsel.services.selector.signals.history import HISTORY
from toolsel.services.selector.signals.quality import QUALITY
from toolsel.services.selector.signals.registry import NEUTRAL, RERANK, RETRIEVAL, check_weights
from toolsel.services.selector.signals.relevance import RELEVANCE
from toolsel.services.selector.signals.vector import VECTOR
from toolsel.services.selector.usage import Blending, UsageMemory, UsageView, scope_of
from toolsel.settings import Settings

log = logging.getLogger(__name__)


def context_key(template: str, tier: str, page: str, intent: str = "general") -> str:
    """Seed 000's bandit context, ``tier:page:general`` by default. ``{intent}`` in the template stands for
    the tool retrieval ranks first (seed 000, 10.3's finer query category): posteriors then learn, per
    apparent intent, which tool the agent really uses."""
    return template.format(tier=tier, page=page or "*", intent=intent)


@dataclass(frozen=True)
class _Retrieved:
    """One query's retrieval: its fused relevance and each retrieval signal's scores, by name."""

    relevance: stages.Scores
    signals: dict[str, stages.Scores]
    bm25_match: stages.Scores
    """BM25 over the query's ceiling: how much of its words each row matched (a raw signal of confidence)."""


_Retrieval = tuple[list[_Retrieved], str, stages.Vector | None]
"""Each query's (and part's) retrieval, the method used, and the whole query's vector if any."""


@dataclass(frozen=True)
class _Scored:
    """One request's scores over the rows it may return (``rows``; every array is aligned with them): the
    composite, its exploring twin, and each breakdown field's values for the reply."""

    rows: stages.Rows
    """Catalog rows, ascending: position i of every array is row ``rows[i]``, and ties keep the catalog's order."""
    pool: stages.Mask
    """Which of them retrieval could return."""
    relevance_top: float
    """The best relevance in the request's pool (what a slot past the candidates scales relevance by)."""
    score: stages.Scores
    explore: stages.Scores
    """The composite with quality fed the Thompson draw instead of the posterior mean."""
    breakdown: dict[str, stages.Scores]
    confidence: stages.Scores
    """The probability that each row is relevant, from its raw retrieval signals."""
    signals: Signals
    """What ``confidence`` was computed from (the fitting script reads them: scripts/fit_confidence.py)."""

    @property
    def relevance(self) -> stages.Scores:
        return self.breakdown["relevance"]

    def evidence(self, prior_alpha: float, prior_beta: float) -> stages.Scores:
        return stages.evidence(self.breakdown["alpha"], self.breakdown["beta"], prior_alpha, prior_beta)

    def at(self, rows: stages.Rows) -> stages.Rows:
        """The positions of these catalog rows (all among ``rows``) in the arrays."""
        return stages.locate(self.rows, rows)

    def shown(self, rows: stages.Rows) -> list[tuple[float, float, dict[str, float]]]:
        """What the reply shows of each of these catalog rows: its score, confidence and breakdown, as Python
        floats rounded to ``SHOWN_DECIMALS`` except the posterior counts (one matrix rounded and converted, not
        one value at a time)."""
        at = self.at(rows)
        names = list(self.breakdown)
        exact = [i for i, name in enumerate(names) if name in _EXACT]
        matrix = np.stack([*(self.breakdown[name][at] for name in names), self.score[at], self.confidence[at]])
        shown = np.round(matrix, SHOWN_DECIMALS)
        shown[exact] = matrix[exact]
        columns: list[list[float]] = shown.T.tolist()
        return [(c[-2], c[-1], dict(zip(names, c[:-2], strict=True))) for c in columns]


@dataclass
class Selector:
    """Holds what a selection reads and answers from memory; the app keeps each part current from events."""

    settings: Settings
    catalog: Catalog
    embedder: Embedder | None
    posteriors: Posteriors = field(default_factory=dict)
    usage: UsageMemory = field(default_factory=UsageMemory)
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
    _retrievals: RetrievalCache[_Retrieval] = field(init=False)
    """The hot-query cache: a repeated query's retrieval while its sources are unchanged (``_retrieval``)."""
    _counted: list[str] = field(init=False)
    """The retrieval signals beside BM25 worth computing: weighed in the fusion or shown in the breakdown (one
    at weight 0 that shows nowhere, the review index's by default, would cost a search per query for nothing)."""

    def __post_init__(self) -> None:
        check_weights(self.settings)
        self._retrievals = RetrievalCache(self.settings.retrieval_cache_size)
        weights = self.settings.fusion_weights
        self._counted = [
            name
            for name, signal in RETRIEVAL.items()
            if name != BM25.name and (weights.get(name, 0.0) > 0 or signal.field is not None)
        ]

    def select(self, request: SelectRequest, started: float | None = None) -> tuple[SelectReply, SelectionEvent]:
        """The reply and the event that records it; ``started`` (``time.perf_counter``) is when handling began, if
        before this call (the query embedded ahead): the reply's ``latency_ms`` counts from it."""
        started = time.perf_counter() if started is None else started
        s, cat = self.settings, self.catalog
        k = request.k or s.default_k
        degraded = sorted(self.degraded_sources)
        counts: dict[str, int] = {"catalog": len(cat)}

        standing = cat.standing(request.tenant_id)
        mask = standing.visible & ~standing.quarantined
        mask &= self._policy(request)
        counts["visible"] = int(mask.sum())
        visible_tokens = int(cat.schema_tokens[mask].sum())  # what the agent would be sent without toolsel
        for ref in request.filters.exclude:
            if (row := cat.rows.get(ref.key)) is not None:
                mask[row] = False
        pinned = np.flatnonzero(mask & cat.pinned)  # pins survive the page and request filters
        mask = self._apply_filters(mask, request)
        allowed = mask  # what related tools may add: visible, not excluded, within the request's filters
        counts["filtered"] = int(mask.sum())
        wanted = stages.page_categories(cat.page_mappings, request.page, cat.category_parents)
        if wanted:
            keys = (f"{plugin}/{category}" for plugin, category in wanted)
            mask, applied = stages.narrow(mask, stages.rows_mask(cat.category_rows, len(cat), keys))
            if not applied:
                degraded.append("page_filter.empty")
        counts["page"] = int(mask.sum())

        pool = mask & ~cat.pinned if request.rerank else mask
        parts, queries = self._queries(request)
        scope = scope_of(request.tenant_id, s.usage_sharing)
        reviews = self._review_lookup(scope)
        usage = self.usage.view(cat, scope, Blending(s.usage_declared_weight, s.usage_declared_prior))
        per_query, method, query_vector = self._retrieval(
            queries, pool, request.retrieval, scope, reviews, usage, degraded
        )
        rankings = [stages.top_n(q.relevance, pool, s.retrieval_candidates) for q in per_query]
        part_rankings = rankings[1:]  # empty unless the query was split
        candidates = retrieval.round_robin(rankings, s.retrieval_candidates)
        counts["retrieved"] = int(candidates.size)
        if len(queries) > 1:
            method += f"+decomposed({len(parts)})"

        intent = self._intent(candidates, query_vector, per_query[0], usage, pool)
        ctx = context_key(s.context_key_template, request.tier, request.page, intent)
        rng = self._rng(request)
        relevance = _best(q.relevance for q in per_query)
        rows = self._rows_read(request, rankings, pinned, relevance, pool, rng)
        scored = self._score(request, ctx, per_query, relevance, query_vector, reviews, rng, degraded, pool, rows)
        score = scored.score
        related: dict[int, int] = {}
        if not request.rerank:
            final = candidates[:k]
            explored = final[:0]
        else:  # from here on rows are positions in the scored subset, catalog rows again once chosen
            rankings = [scored.at(r) for r in rankings]
            candidates = scored.at(candidates)
            if request.filters.min_score is not None:
                keep = scored.confidence >= request.filters.min_score
                rankings = [r[keep[r]] for r in rankings]
                candidates = candidates[keep[candidates]]
            if len(rankings) > 1:  # each need keeps its quota of the slots (seed 002), in its own relevance's order
                own = [stages.rescored(score, scored.relevance, q.relevance[rows]) for q in per_query]
                ordered = [r[np.argsort(-o[r], kind="stable")] for r, o in zip(rankings, own, strict=True)]
                candidates = retrieval.round_robin(ordered, s.retrieval_candidates)
                exploit_score = -np.arange(rows.size, dtype=np.float64)
                exploit_score[candidates] = -np.arange(candidates.size)
            else:
                exploit_score = score
            if s.rerank_sampling == "all":
                chosen, explored = stages.choose(candidates, scored.explore, scored.explore, k, 0)
            else:
                chosen, explored = self._choose(candidates, exploit_score, scored, k, request, rng, usage)
            chosen, explored = rows[chosen], rows[explored]
            final = stages.inject_pins(chosen, pinned, cat.pin_weight)
            if chosen.size:
                final, related = self._with_related(final, int(chosen[0]), allowed, k)
            if request.max_tools is not None:  # pins first, then the ranking, then related tools: cut from the end
                final = final[: request.max_tools]
                related = {row: top for row, top in related.items() if row in final}
                explored = explored[np.isin(explored, final)]
        counts["returned"] = int(final.size)
        offered_for = [None if i is None else parts[i] for i in retrieval.needs(final, part_rankings)]
        reply, event = self._reply(
            request,
            ctx,
            method,
            degraded,
            counts,
            final,
            explored,
            scored,
            visible_tokens,
            started,
            related,
            offered_for,
        )
        no_match = not any(t.confidence >= s.no_match_confidence for t in reply.tools if t.related_to is None)
        sub_queries = parts if len(parts) > 1 else []
        return reply.model_copy(update={"no_match": no_match, "sub_queries": sub_queries}), event

    def to_embed(self, request: SelectRequest) -> list[str]:
        """What the model reads for this request (``_read``: the query, its parts, its sentences) when it has not
        cached their vectors: the app embeds them in a worker thread first, so that ``select`` finds them cached.
        Empty when they are cached, and when BM25 answers alone, or may (its fast path decides per query whether
        the vector is needed at all)."""
        if self.embedder is None or request.retrieval == "bm25" or self.settings.bm25_fast_path:
            return []
        queries = self._queries(request)[1]
        texts = _read(queries, self._sentences(queries[0]))
        return [] if self.embedder.cached(texts[0], texts[1:]) else texts

    def _sentences(self, query: str) -> list[str]:
        """The sentences of a query of several (none for one sentence, or with ``TOOLSEL_SENTENCE_VECTORS`` off): a
        tool's cosine with the whole query is its best over the query and these, since a request that sets the
        scene before it asks is nearest its tool in the sentence that asks."""
        found = retrieval.split_sentences(query) if self.settings.sentence_vectors else []
        return found if len(found) > 1 else []

    def _queries(self, request: SelectRequest) -> tuple[list[str], list[str]]:
        """The request's atomic needs (seed 002; just the query when it is not compound) and what retrieval ranks
        for: the whole query, then each need."""
        parts = retrieval.decompose(request.query) if self.settings.decompose_queries else [request.query]
        return parts, [request.query, *parts] if len(parts) > 1 else parts

    def _rows_read(
        self,
        request: SelectRequest,
        rankings: list[stages.Rows],
        pinned: stages.Rows,
        relevance: stages.Scores,
        pool: stages.Mask,
        rng: np.random.Generator | None,
    ) -> stages.Rows:
        """The only rows a selection reads after retrieval, ascending, so every later stage scores these alone:
        each query's (and part's) candidates, whose merge the rerank redoes; when reranking, also the pins, the
        related tools of each candidate (the top one's may join the reply) and the relevance ranking to the depth
        an exploration slot may reach."""
        candidates = np.concatenate(rankings)
        if not request.rerank:
            return np.unique(candidates)
        related = [r for c in np.unique(candidates).tolist() for r in self.catalog.related[c]]
        reach = candidates[:0]
        if self.settings.rerank_sampling != "all" and self._explores_deep(rng):
            reach = stages.top_n(relevance, pool, self.settings.exploration_depth)
        return np.unique(np.concatenate([candidates, pinned, reach, np.array(related, dtype=np.int64)]))

    def _score(
        self,
        request: SelectRequest,
        ctx: str,
        per_query: list[_Retrieved],
        relevance: stages.Scores,
        query_vector: stages.Vector | None,
        reviews: ReviewLookup | None,
        rng: np.random.Generator | None,
        degraded: list[str],
        pool: stages.Mask,
        rows: stages.Rows,
    ) -> _Scored:
        """The rerank signals of this request in its tenant's bandit context, weighed into the composite, over
        the rows it may return (``per_query`` and ``relevance`` are retrieval's, over every catalog row)."""
        alpha, beta, last_success_s = self._posterior(request.tenant_id, ctx, rows)
        sample = stages.thompson(alpha, beta, rng)
        if reviews is None:
            degraded.append("fitness.review_index")
        signal_ctx = RerankContext(
            settings=self.settings,
            request=request,
            catalog=self.catalog,
            standing=self.catalog.standing(request.tenant_id),
            rows=rows,
            relevance=relevance[rows],
            success=stages.posterior_mean(alpha, beta),
            last_success_s=last_success_s,
            vector=query_vector,
            reviews=reviews,
            user_history=self.history,
            now_s=time.time(),
        )
        rerank = {name: signal.scores(signal_ctx) for name, signal in RERANK.items()}
        score = self._composite(rerank)
        drawn = QUALITY.scores(replace(signal_ctx, success=sample))
        breakdown = {
            **{f: _best(q.signals[n][rows] for q in per_query) for n, f in _fields(RETRIEVAL)},
            **{f: rerank[n] for n, f in _fields(RERANK)},
            "thompson": sample,
            "alpha": alpha,
            "beta": beta,
            "composite": score,
        }
        signals = Signals(
            breakdown[VECTOR.field],
            _best(q.bm25_match[rows] for q in per_query),
            confidence.best_rank([q.relevance for q in per_query], pool, rows),
            confidence.lead(_best(q.signals[VECTOR.name] for q in per_query), pool, rows),
            len(request.query),
        )
        sure = confidence.confidence(signals, len(per_query) > 1, self.settings.confidence_coefficients)
        explore = self._composite({**rerank, QUALITY.name: drawn})
        top = float(relevance[pool].max()) if pool.any() else 0.0  # this request's pool: never another tenant's rows
        return _Scored(rows, pool[rows], top, score, explore, breakdown, sure, signals)

    def _policy(self, request: SelectRequest) -> stages.Mask:
        who = Subject(request.tenant_id, request.user_id, request.page, request.role, request.tier)
        cat = self.catalog
        return visible_mask(self.rules, who, cat.rows, cat.category_rows, len(cat), self.settings.tier_order)

    def _choose(
        self,
        candidates: stages.Rows,
        exploit: stages.Scores,
        scored: _Scored,
        k: int,
        request: SelectRequest,
        rng: np.random.Generator | None,
        usage: UsageView | None,
    ) -> tuple[stages.Rows, stages.Rows]:
        """The top by the expected score and the exploration slots by the draw; with a chance that falls as this
        context's top tools gather evidence, a slot reaches past the candidates to ``exploration_depth`` (rows
        are positions in ``scored``, which holds that depth of the ranking), to the tools nothing was learnt of
        in the scope when there are any there: one that already learnt has its learnt vector to be found by."""
        s = self.settings
        slots = s.exploration_slots if request.explore else 0
        if rng is None or not slots or not self._explores_deep(rng):
            return stages.choose(candidates, exploit, scored.explore, k, slots)
        top = candidates[np.argsort(-exploit[candidates], kind="stable")][:k]
        observed = float(scored.evidence(s.prior_alpha, s.prior_beta)[top].sum())
        beyond = stages.beyond_candidates(scored.relevance, scored.pool, candidates, s.exploration_depth)
        if request.filters.min_score is not None:
            beyond = beyond[scored.confidence[beyond] >= request.filters.min_score]
        if usage is not None and (untaught := beyond[~np.isin(scored.rows[beyond], usage.rows)]).size:
            beyond = untaught
        if beyond.size == 0 or rng.random() >= stages.deep_exploration_chance(observed):
            return stages.choose(candidates, exploit, scored.explore, k, s.exploration_slots)
        deep = stages.deep_score(scored.breakdown["thompson"], scored.relevance, scored.relevance_top)
        return stages.choose(candidates, exploit, deep, k, s.exploration_slots, beyond)

    def _explores_deep(self, rng: np.random.Generator | None) -> bool:
        """Whether an exploration slot may reach past the candidates at all."""
        s = self.settings
        return rng is not None and s.exploration_slots > 0 and s.exploration_depth > s.retrieval_candidates

    def _rng(self, request: SelectRequest) -> np.random.Generator | None:
        """The request's randomness (seeded when it gives a seed); None when sampling is off."""
        if not self.settings.thompson_sampling:
            return None
        return np.random.default_rng(request.seed) if request.seed is not None else self.rng

    def learn(
        self, tool_key: str, tenant_id: str, context_key: str, alpha: float, beta: float, last_success: datetime | None
    ) -> None:
        """Take in one posterior the learner committed."""
        self.posteriors.setdefault((tenant_id, context_key), {})[tool_key] = posterior(alpha, beta, last_success)

    def _posterior(
        self, tenant_id: str, ctx: str, rows: stages.Rows
    ) -> tuple[stages.Scores, stages.Scores, stages.Scores]:
        """Each of these rows' Beta(alpha, beta) and last success in this tenant's context: the prior and never,
        except for the tools learnt in it."""
        s, cat = self.settings, self.catalog
        alpha = np.full(rows.size, s.prior_alpha)
        beta = np.full(rows.size, s.prior_beta)
        last_success = np.full(rows.size, np.nan)
        learnt = self.posteriors.get((tenant_id, ctx), {})
        found = [(row, p) for key, p in learnt.items() if (row := cat.rows.get(key)) is not None]
        if found:
            at = stages.locate(rows, np.array([row for row, _ in found], dtype=np.int64))
            read = at >= 0  # learnt tools this selection never reads are left out
            alpha[at[read]], beta[at[read]], last_success[at[read]] = np.array([p for _, p in found])[read].T
        return alpha, beta, last_success

    def _intent(
        self,
        candidates: stages.Rows,
        query_vector: stages.Vector | None,
        whole: _Retrieved,
        usage: UsageView | None,
        pool: stages.Mask,
    ) -> str:
        """The query's apparent intent (seed 000, 10.3): the tool nearest its meaning by declared vectors alone,
        so that what use teaches moves the ranking but never the context its evidence is kept under. Reuses the
        vector signal's cosine; only the rows it replaced with a learnt blend are computed again."""
        cat = self.catalog
        cosine = whole.signals.get("vector")
        declared = pool & cat.has_vector
        if query_vector is None or cosine is None or not declared.any():
            return cat.keys[int(candidates[0])] if candidates.size else "none"
        nearest = cosine.copy()
        if usage is not None:
            nearest[usage.rows] = stages.cosine(cat.vectors[usage.rows], query_vector)
        return cat.keys[int(np.argmax(np.where(declared, nearest, -np.inf)))]

    def _review_lookup(self, scope: str) -> ReviewLookup | None:
        """The review index as this scope sees it: its own entries (a slice of the index: a request searches
        only those), each with its tool's row in this catalog copy."""
        if self.reviews is None:
            return None
        s = self.settings
        return ReviewLookup.of(self.reviews, self._review_rows(), scope, s.review_neighbours, s.review_min_similarity)

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
        """The request's own filters: plugins, servers, categories and tags, each looked up in the catalog's
        index."""
        cat, f = self.catalog, request.filters
        for name, wanted in (
            ("plugins", f.plugins),
            ("servers", f.servers),
            ("categories", f.categories),
            ("tags", f.tags),
        ):
            if wanted:
                mask = mask & stages.rows_mask(cat.filter_rows[name], len(cat), wanted)
        return mask

    def _retrieval(
        self,
        queries: list[str],
        pool: stages.Mask,
        mode: str,
        scope: str,
        reviews: ReviewLookup | None,
        usage: UsageView | None,
        degraded: list[str],
    ) -> _Retrieval:
        """``_retrieve``'s result, from the hot-query cache while the catalog copy, the review index (when retrieval
        reads it) and the scope's usage view it was computed from are still the ones held; a degraded retrieval
        is not kept."""
        key = (tuple(queries), mode, scope, pool_digest(pool))
        sources = (self.catalog, self.reviews if HISTORY.name in self._counted else None, usage)
        kept = self._retrievals.get(key, sources)
        if kept is not None:
            return kept
        before = len(degraded)
        found = self._retrieve(queries, pool, mode, reviews, usage, degraded)
        if len(degraded) == before:
            per_query, _, vector = found
            arrays = [a for q in per_query for a in (q.relevance, q.bm25_match, *q.signals.values())]
            freeze(*arrays, *([vector] if vector is not None else []))
            self._retrievals.put(key, sources, found)
        return found

    def _retrieve(
        self,
        queries: list[str],
        pool: stages.Mask,
        mode: str,
        reviews: ReviewLookup | None,
        usage: UsageView | None,
        degraded: list[str],
    ) -> _Retrieval:
        """Each query's retrieval, the method used, and the whole query's vector if any. BM25 comes first: its
        confidence may skip the embedding (seed 003's fast path), and it answers alone when vectors cannot."""
        s, cat = self.settings, self.catalog
        zeros = np.zeros(len(cat), dtype=np.float64)
        contexts = [QueryContext(s, cat, query, pool, None, reviews, usage) for query in queries]
        lexical = [BM25.scores(ctx) if mode != "vector" else zeros for ctx in contexts]
        fast = [
            mode == "hybrid"
            and s.bm25_fast_path
            and retrieval.bm25_confidence(bm25, pool, s.bm25_confidence_scale) > s.bm25_confidence_threshold
            for bm25 in lexical
        ]
        wanted = mode != "bm25" and not all(fast)  # the request's vectors come from one call, all or none
        sentences = self._sentences(queries[0]) if wanted else []
        texts = _read(queries, sentences)
        vectors = self._embed(texts if wanted else [], degraded)
        embedded = [q for q in texts if q in vectors]
        products = dict(zip(embedded, stages.cosines(cat.vectors, [vectors[q] for q in embedded]), strict=True))
        read = tuple((vectors[x], products[x]) for x in sentences if x in products)  # the whole query's sentences
        out = []
        method = mode
        query_vector = None
        for i, (ctx, bm25, fast_path) in enumerate(zip(contexts, lexical, fast, strict=True)):
            found = dict.fromkeys(RETRIEVAL, zeros)
            found[BM25.name] = bm25
            if mode != "bm25" and not fast_path:
                cosine, whole = products.get(ctx.query), read if i == 0 else ()
                ctx = replace(ctx, vector=vectors.get(ctx.query), cosine=cosine, sentences=whole)
                if ctx.vector is None and mode == "vector":
                    method = "unranked"
                query_vector = ctx.vector if i == 0 else query_vector
                others = [VECTOR.name] if mode == "vector" else self._counted
                found.update({name: RETRIEVAL[name].scores(ctx) for name in others})
            if fast_path:
                method = "bm25-fast-path"
            if mode == "bm25" or fast_path or (mode == "hybrid" and not found[VECTOR.name].any()):
                top = bm25[pool].max() if pool.any() else 0.0
                relevance = bm25 / top if top > 0 else zeros
                if mode == "hybrid" and not fast_path:
                    method = "bm25"
            elif mode == "vector":
                relevance = found[VECTOR.name]
            else:
                relevance = self._fuse(found, ctx)
            match = confidence.bm25_match(bm25, cat.lexical.ceiling(ctx.query)) if mode != "vector" else zeros
            out.append(_Retrieved(relevance, found, match))
        return out, method, query_vector

    def _fuse(self, found: dict[str, stages.Scores], ctx: QueryContext) -> stages.Scores:
        """The retrieval signals in one relevance, each weighed by its setting times its trust for this query."""
        s = self.settings
        scores = [found[name] for name in RETRIEVAL]
        weights = [s.fusion_weights.get(name, 0.0) * sig.trust(found[name], ctx) for name, sig in RETRIEVAL.items()]
        if s.fusion == "zscore":
            factors = [s.fusion_zscore_bm25_factor if name == BM25.name else 1.0 for name in RETRIEVAL]
            return fusion.zscore_fusion(scores, [w * f for w, f in zip(weights, factors, strict=True)], ctx.pool)
        if s.fusion == "scores":
            return retrieval.score_fusion(scores, weights, ctx.pool)
        lists = [retrieval.ranks(signal, ctx.pool) for signal in scores]
        return retrieval.reciprocal_rank_fusion(lists, weights, s.fusion_rrf_k)

    def _composite(self, rerank: dict[str, stages.Scores]) -> stages.Scores:
        """Bounded by relevance: the learnt parts lift a tool at most as much as it is relevant."""
        return stages.composite(rerank, self.settings.rerank_weights, NEUTRAL, bound=RELEVANCE.name)

    def _embed(self, queries: list[str], degraded: list[str]) -> dict[str, stages.Vector]:
        """The vectors of the whole query (``queries[0]``) and its parts, from one request to the model; none when
        the model is missing or fails (BM25 answers alone)."""
        if not queries:
            return {}
        if self.embedder is None:
            degraded.append("retrieval.vectors")
            return {}
        try:
            return dict(zip(queries, self.embedder.embed_request(queries[0], queries[1:]), strict=True))
        except Exception:
            log.exception("query embedding failed; BM25 alone")
            if "retrieval.vectors" not in degraded:
                degraded.append("retrieval.vectors")
            return {}

    def _reply(
        self,
        request: SelectRequest,
        ctx: str,
        method: str,
        degraded: list[str],
        counts: dict[str, int],
        final: stages.Rows,
        explored: stages.Rows,
        scored: _Scored,
        visible_tokens: int,
        started: float,
        related: Mapping[int, int],
        offered_for: Sequence[str | None],
    ) -> tuple[SelectReply, SelectionEvent]:
        """The reply and its event, each validated once as a whole (nested models built in one pass, not one
        Python constructor per tool); ``offered_for`` is each final row's part of a compound query, if any."""
        cat = self.catalog
        exploring = set(explored.tolist())
        tools = [
            self._scored(r, shown, r in exploring, related.get(r))
            for r, shown in zip(final.tolist(), scored.shown(final), strict=True)
        ]
        selected_tokens = int(cat.schema_tokens[final].sum())
        hints = {
            f"{t['plugin_id']}/{t['category']}": hint
            for t in tools
            if t["category"] and (hint := cat.workflow_hints.get((t["plugin_id"], t["category"])))
        }
        latency = (time.perf_counter() - started) * 1000
        reply = SelectReply.model_validate(
            {
                "selection_id": uuid4(),
                "tools": tools,
                "context_key": ctx,
                "method": method,
                "degraded": degraded,
                "candidate_counts": counts,
                "workflow_hints": hints,
                "tokens": {
                    "selected": selected_tokens,
                    "catalog": visible_tokens,
                    "saved": max(visible_tokens - selected_tokens, 0),
                },
                "latency_ms": latency,
            }
        )
        event = SelectionEvent.model_validate(
            {
                "selection_id": reply.selection_id,
                "tenant_id": request.tenant_id,
                "user_id": request.user_id,
                "session_id": request.session_id,
                "query": request.query,
                "page": request.page,
                "tier": request.tier,
                "role": request.role,
                "context_key": ctx,
                "method": method,
                "tools": [
                    {
                        "plugin_id": t["plugin_id"],
                        "name": t["name"],
                        "rank": i,
                        "score": t["score"],
                        "pinned": t["pinned"],
                        "exploration": t["exploration"],
                        "sub_query": need,
                        "similarity": t["breakdown"][VECTOR.field],
                    }
                    for i, (t, need) in enumerate(zip(tools, offered_for, strict=True))
                ],
                "candidate_count": counts["retrieved"],
                "latency_ms": latency,
                "tokens_selected": selected_tokens,
                "tokens_catalog": visible_tokens,
            }
        )
        return reply, event

    def _with_related(
        self, final: stages.Rows, top: int, allowed: stages.Mask, k: int
    ) -> tuple[stages.Rows, dict[int, int]]:
        """Seed 003: the top tool's related tools follow it into room the ranking left (row -> top row)."""
        taken = set(final.tolist())
        extra = [r for r in self.catalog.related[top] if allowed[r] and r not in taken][: max(k - final.size, 0)]
        return np.concatenate([final, np.array(extra, dtype=np.int64)]), dict.fromkeys(extra, top)

    def _ref(self, row: int) -> dict[str, str]:
        """A tool's reference as the reply carries it (``ToolRef``'s fields)."""
        return {"plugin_id": self.catalog.plugin_ids[row], "name": self.catalog.names[row]}

    def _scored(
        self, row: int, shown: tuple[float, float, dict[str, float]], exploration: bool, related_to: int | None = None
    ) -> dict[str, Any]:
        """Catalog row ``row`` with its scores (``_Scored.shown``), as ``ScoredTool``'s fields."""
        cat, spec = self.catalog, self.catalog.specs[row]
        score, sure, breakdown = shown
        parameters = spec.get("parameters")
        return {
            "plugin_id": cat.plugin_ids[row],
            "name": cat.names[row],
            "display_name": str(spec.get("display_name") or ""),
            "description": str(spec.get("description") or ""),
            "parameters": parameters if isinstance(parameters, dict) else {},
            "category": cat.categories[row],
            "score": score,
            "confidence": sure,
            "pinned": bool(cat.pinned[row]),
            "exploration": exploration,
            "usage_hint": str(spec.get("usage_hint") or "") or None,
            "related_tools": [self._ref(r) for r in cat.related[row]],
            "related_to": None if related_to is None else self._ref(related_to),
            "breakdown": breakdown,
            "server": str(spec.get("server") or ""),
            "execution_type": spec.get("execution_type") or "internal",
            "execution_config": config if isinstance(config := spec.get("execution_config"), dict) else {},
        }


_EXACT = frozenset({"alpha", "beta"})
"""Breakdown fields given as they are (posterior counts), not rounded."""


def _fields(registry: Mapping[str, Signal[Any]]) -> list[tuple[str, str]]:
    """(signal name, breakdown field) of the signals a breakdown shows."""
    return [(name, signal.field) for name, signal in registry.items() if signal.field is not None]


def _read(queries: list[str], sentences: list[str]) -> list[str]:
    """What the model reads for a request, in one call (late chunking): the whole query and its parts, then each
    of the whole query's sentences not already one of them."""
    return list(dict.fromkeys([*queries, *sentences]))


def _best(per_query: Iterable[stages.Scores]) -> stages.Scores:
    """Each row's best score over the query's parts (a tool serves the need it fits best)."""
    best: stages.Scores = reduce(np.maximum, per_query)
    return best


SHOWN_DECIMALS = 6
"""Decimals of the scores a reply shows: enough to order them, short on the wire."""
