"""Fusion: each query part's retrieval signals in one relevance, weighed by their settings and their trust
for the query; BM25 alone where vectors are not read (the BM25 mode, its fast path, or no vector to be had)."""

from dataclasses import dataclass
from functools import reduce

import numpy as np

from toolsel.services.selector import confidence, fusion, retrieval, stages
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.retrieve import Part, Parts
from toolsel.services.selector.signals.base import QueryContext
from toolsel.services.selector.signals.bm25 import BM25
from toolsel.services.selector.signals.registry import RETRIEVAL
from toolsel.services.selector.signals.vector import VECTOR


@dataclass(frozen=True)
class Retrieved:
    """One query part's retrieval: its fused relevance and each retrieval signal's scores, by name."""

    relevance: stages.Scores
    signals: dict[str, stages.Scores]
    bm25_match: stages.Scores
    """BM25 over the query's ceiling: how much of its words each row matched (a raw signal of confidence)."""

    def arrays(self) -> list[np.ndarray]:
        """Every array it holds (the hot-query cache makes them read-only)."""
        return [self.relevance, self.bm25_match, *self.signals.values()]


@dataclass(frozen=True)
class Fused:
    """The request's retrieval: each part's (the whole query first), the method used, the whole query's vector."""

    per_query: list[Retrieved]
    method: str
    query_vector: stages.Vector | None
    degraded: list[str]
    intent_evidence: stages.Scores
    """Each row's evidence for the query's intent from what the tool declares alone, never from what use taught it:
    the best cosine of the whole query and its sentences with its declared vector (clipped at 0, as the vector
    signal reads it), or without vectors the BM25 of its declared text; -inf where a row has nothing to go by."""

    def arrays(self) -> list[np.ndarray]:
        """Every array it holds (the hot-query cache makes them read-only)."""
        found = [a for q in self.per_query for a in q.arrays()]
        return [*found, self.intent_evidence, *(a for a in (self.query_vector,) if a is not None)]


def run(held: Held, parts: Parts) -> Fused:
    mode, method = parts.mode, parts.mode
    out = []
    for part in parts.parts:
        relevance, method = _relevance(held, part, mode, method)
        bm25 = part.signals[BM25.name]
        if mode == "vector":
            match = np.zeros_like(bm25)
        else:
            match = confidence.bm25_match(bm25, held.catalog.lexical.ceiling(part.context.query))
        out.append(Retrieved(relevance, part.signals, match))
    whole = parts.parts[0].context
    return Fused(out, method, whole.vector, parts.degraded, intent_evidence(held, whole))


def intent_evidence(held: Held, whole: QueryContext) -> stages.Scores:
    """``Fused.intent_evidence`` for the whole query: its declared cosines, as retrieval computed them, else its
    declared text's BM25 (learnt words left out: the label must not follow what use taught); -inf where a row has
    nothing to go by."""
    cat = held.catalog
    if whole.cosine is None:
        lexical = cat.lexical.scores(whole.query)
        return np.where(lexical > 0.0, lexical, -np.inf)
    best: stages.Scores = reduce(np.maximum, [whole.cosine, *(raw for _, raw in whole.sentences)])
    return np.where(cat.has_vector, best.clip(min=0.0), -np.inf)


def _relevance(held: Held, part: Part, mode: str, method: str) -> tuple[stages.Scores, str]:
    """The part's relevance and the request's method so far (each part may say the vectors were not used)."""
    found, ctx = part.signals, part.context
    if mode == "vector" and ctx.vector is None:
        method = "unranked"
    if part.fast_path:
        method = "bm25-fast-path"
    if mode == "bm25" or part.fast_path or (mode == "hybrid" and not found[VECTOR.name].any()):
        bm25 = found[BM25.name]
        top = bm25[ctx.pool].max() if ctx.pool.any() else 0.0
        if mode == "hybrid" and not part.fast_path:
            method = "bm25"
        return (bm25 / top if top > 0 else np.zeros_like(bm25)), method
    if mode == "vector":
        return found[VECTOR.name], method
    if held.settings.fusion_bm25_coverage > 0:
        bm25 = covered(held.catalog.lexical, found[BM25.name], ctx.query, held.settings.fusion_bm25_coverage)
        found = {**found, BM25.name: bm25}
    return fuse(held, found, ctx), method


def covered(lexical: retrieval.LexicalIndex, bm25: stages.Scores, query: str, power: float) -> stages.Scores:
    """Each row's BM25 score times the share of the query's BM25 ceiling it reached (the IDF mass of the query's
    words it matched): a row that matched a common word or two of a longer request ("find", "near") keeps little of
    its score, one that matched most of it keeps nearly all."""
    result: stages.Scores = bm25 * confidence.bm25_match(bm25, lexical.ceiling(query)) ** power
    return result


def fuse(held: Held, found: dict[str, stages.Scores], ctx: QueryContext) -> stages.Scores:
    """The retrieval signals in one relevance, each weighed by its setting times its trust for this query."""
    s = held.settings
    scores = [found[name] for name in RETRIEVAL]
    weights = [s.fusion_weights.get(name, 0.0) * sig.trust(found[name], ctx) for name, sig in RETRIEVAL.items()]
    if s.fusion == "zscore":
        factors = [s.fusion_zscore_bm25_factor if name == BM25.name else 1.0 for name in RETRIEVAL]
        return fusion.zscore_fusion(scores, [w * f for w, f in zip(weights, factors, strict=True)], ctx.pool)
    if s.fusion == "scores":
        return retrieval.score_fusion(scores, weights, ctx.pool)
    lists = [retrieval.ranks(signal, ctx.pool) for signal in scores]
    return retrieval.reciprocal_rank_fusion(lists, weights, s.fusion_rrf_k)
