"""Retrieval per query part: each part's retrieval signals over every catalog row of the pool. BM25 comes
first: its confidence may skip the embedding (seed 003's fast path), and it answers alone when vectors cannot."""

import logging
from dataclasses import dataclass, replace

import numpy as np

from toolsel.services.selector import retrieval, stages
from toolsel.services.selector.decompose import decompose, split_sentences
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.signals.base import QueryContext
from toolsel.services.selector.signals.bm25 import BM25
from toolsel.services.selector.signals.registry import RETRIEVAL
from toolsel.services.selector.signals.vector import VECTOR
from toolsel.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Part:
    """One query's (the whole request's, or one of its parts') retrieval signals, by name."""

    context: QueryContext
    """What they were scored from: its vector and cosines when the model read it."""
    signals: dict[str, stages.Scores]
    fast_path: bool
    """BM25 was sure enough alone: no vector was read for it."""


@dataclass(frozen=True)
class Parts:
    parts: list[Part]
    mode: str
    """The request's retrieval mode (hybrid, vector, bm25)."""
    degraded: list[str]


def queries_of(settings: Settings, query: str) -> tuple[list[str], list[str]]:
    """The request's atomic needs (seed 002; just the query when it is not compound) and what retrieval ranks
    for: the whole query, then each need."""
    parts = decompose(query) if settings.decompose_queries else [query]
    return parts, [query, *parts] if len(parts) > 1 else parts


def sentences_of(settings: Settings, query: str) -> list[str]:
    """The sentences of a query of several, its first ``TOOLSEL_SENTENCE_VECTORS_MAX`` (none for one sentence, or
    with ``TOOLSEL_SENTENCE_VECTORS`` off): a tool's cosine with the whole query is its best over the query and
    these, since a request that sets the scene before it asks is nearest its tool in the sentence that asks."""
    found = split_sentences(query) if settings.sentence_vectors else []
    return found[: settings.sentence_vectors_max] if len(found) > 1 else []


def read(queries: list[str], sentences: list[str]) -> list[str]:
    """What the model reads for a request, in one call (late chunking): the whole query and its parts, then each
    of the whole query's sentences not already one of them."""
    return list(dict.fromkeys([*queries, *sentences]))


def run(held: Held, queries: list[str], pool: stages.Mask, mode: str) -> Parts:
    s, cat = held.settings, held.catalog
    degraded: list[str] = []
    zeros = np.zeros(len(cat), dtype=np.float64)
    contexts = [QueryContext(s, cat, query, pool, None, held.reviews, held.usage) for query in queries]
    lexical = [BM25.scores(ctx) if mode != "vector" else zeros for ctx in contexts]
    fast = [
        mode == "hybrid"
        and s.bm25_fast_path
        and retrieval.bm25_confidence(bm25, pool, s.bm25_confidence_scale) > s.bm25_confidence_threshold
        for bm25 in lexical
    ]
    wanted = mode != "bm25" and not all(fast)  # the request's vectors come from one call, all or none
    sentences = sentences_of(s, queries[0]) if wanted else []
    texts = read(queries, sentences)
    vectors = _embed(held, texts if wanted else [], degraded)
    embedded = [q for q in texts if q in vectors]
    products = dict(zip(embedded, stages.cosines(cat.vectors, [vectors[q] for q in embedded]), strict=True))
    whole = tuple((vectors[x], products[x]) for x in sentences if x in products)  # the whole query's sentences
    parts = []
    for i, (ctx, bm25, fast_path) in enumerate(zip(contexts, lexical, fast, strict=True)):
        found = dict.fromkeys(RETRIEVAL, zeros)
        found[BM25.name] = bm25
        if mode != "bm25" and not fast_path:
            own = whole if i == 0 else ()
            ctx = replace(ctx, vector=vectors.get(ctx.query), cosine=products.get(ctx.query), sentences=own)
            others = [VECTOR.name] if mode == "vector" else held.counted
            found.update({name: RETRIEVAL[name].scores(ctx) for name in others})
        parts.append(Part(ctx, found, fast_path))
    return Parts(parts, mode, degraded)


def _embed(held: Held, queries: list[str], degraded: list[str]) -> dict[str, stages.Vector]:
    """The vectors of the whole query (``queries[0]``) and its parts, from one request to the model; none when
    the model is missing or fails (BM25 answers alone)."""
    if not queries:
        return {}
    if held.embedder is None:
        degraded.append("retrieval.vectors")
        return {}
    try:
        return dict(zip(queries, held.embedder.embed_request(queries[0], queries[1:]), strict=True))
    except Exception:
        log.exception("query embedding failed; BM25 alone")
        if "retrieval.vectors" not in degraded:
            degraded.append("retrieval.vectors")
        return {}
