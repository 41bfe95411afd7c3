"""Candidates: each query part's top-n, their merge, and the only rows every later stage reads, with
what those stages need of retrieval's view of the whole pool (ranks, the vector's lead, the best relevance, the
bandit context) taken here, once: from here on nothing reads an array over the whole catalog."""

import hashlib
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import reduce

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.contracts.selection import CONTEXT_KEY_MAX
from toolsel.pages import page_route
from toolsel.services.selector import confidence, retrieval, stages
from toolsel.services.selector.pipeline.fuse import Fused, Retrieved
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.visibility import Visible
from toolsel.services.selector.retrieval_cache import pool_digest
from toolsel.services.selector.signals.vector import VECTOR


@dataclass(frozen=True)
class Candidates:
    rows: stages.Rows
    """The catalog rows the rest of the selection reads, ascending: each part's candidates and, when reranking,
    the pins, each candidate's related tools and the relevance ranking to the depth an exploration slot reaches.
    Position i of every array below is row ``rows[i]``."""
    rankings: list[stages.Rows]
    """Each part's top-n (the whole query first), as positions in ``rows``."""
    merged: stages.Rows
    """The rankings merged a turn each (every need gets its quota), as positions in ``rows``."""
    per_query: list[Retrieved]
    """Each part's retrieval, over ``rows``."""
    in_pool: stages.Mask
    """Which of ``rows`` retrieval could return (the unscoped pins are not in the pool when reranking)."""
    rank: stages.Scores
    """Each row's best retrieval rank over the parts (1: first; infinity: not ranked)."""
    lead: stages.Scores
    """Each row's cosine less the best other row's in the pool (``confidence.lead``)."""
    relevance_top: float
    """The best relevance in the pool: what a slot past the candidates scales relevance by."""
    nearest_category: str | None
    """The category of the tool nearest the query among all the request may see (``nearest``): where scoped pins
    look for the query's category."""
    intent: str
    """The query's intent label (``intent``)."""
    context_key: str
    """The request's bandit context (``context_of``): what the rerank reads and the selection is learnt under."""
    explores_deep: bool
    """Whether an exploration slot may reach past the candidates (the rows hold that depth then)."""

    @property
    def relevance(self) -> stages.Scores:
        """Each row's best relevance over the parts (a tool serves the need it fits best)."""
        return best(q.relevance for q in self.per_query)

    def arrays(self) -> list[np.ndarray]:
        """Every array it holds (the hot-query cache makes them read-only)."""
        parts = [a for q in self.per_query for a in q.arrays()]
        return [self.rows, *self.rankings, self.merged, *parts, self.in_pool, self.rank, self.lead]

    def at(self, catalog_rows: stages.Rows) -> stages.Rows:
        """The positions of these catalog rows (all among ``rows``)."""
        return stages.locate(self.rows, catalog_rows)


def variant(request: SelectRequest, visible: Visible) -> Hashable:
    """What the stage reads beyond the retrieval it is given (which the hot-query cache keys by the query, its
    scope and the rows it scored) and the selector's settings (fixed for its life): requests of one query alike in
    these have the very same candidates. The tenant, because its contexts bound its key (``context_of``) and a scope
    may be shared; a key kept before the tenant reached the bound stays in use until the cache drops it (at most
    ``retrieval_cache_size`` x ``VARIANTS_KEPT`` contexts past the bound)."""
    return (
        request.tenant_id,
        request.rerank,
        request.tier,
        request.page,
        pool_digest(visible.pool),
        pool_digest(visible.seen),
        visible.pinned.tobytes(),
    )


def context_key(template: str, tier: str, page: str, intent: str) -> str:
    """The bandit context (``TOOLSEL_CONTEXT_KEY_TEMPLATE``, ``{tier}:{page}:{intent}`` by default), the page as
    its route (``page_route``). ``{intent}`` stands for the query's intent label (seed 000, 10.3's finer query
    category): posteriors then learn, per intent, which tool the agent really uses. A key longer than
    ``CONTEXT_KEY_MAX`` (a template with much text of its own about a long page) keeps its beginning and ends with a
    digest of the whole, so that it fits the selection event and two such keys stay apart."""
    key = template.format(tier=tier, page=page_route(page) or "*", intent=intent)
    if len(key) <= CONTEXT_KEY_MAX:
        return key
    digest = hashlib.blake2b(key.encode(), digest_size=16).hexdigest()
    return f"{key[: CONTEXT_KEY_MAX - len(digest) - 1]}#{digest}"


def context_of(held: Held, request: SelectRequest, intent: str) -> str:
    """The context the selection reads and is learnt under: the request's own (``context_key``), unless that is new
    to its tenant and the tenant has learnt under ``contexts_per_tenant_max`` contexts already; then the intent's
    with page and tier ``*``, which no request field varies (the intent is a tool or category the request may see,
    or ``none``). Pages and tiers are free text, and each new one made a context of posteriors in the store and in
    every selector."""
    s = held.settings
    key = context_key(s.context_key_template, request.tier, request.page, intent)
    bound = s.contexts_per_tenant_max
    if bound == 0 or held.contexts < bound or (request.tenant_id, key) in held.posteriors:
        return key
    return context_key(s.context_key_template, "*", "*", intent)


def explores_deep(held: Held) -> bool:
    """Whether an exploration slot may reach past the candidates at all."""
    s = held.settings
    return held.rng is not None and s.exploration_slots > 0 and s.exploration_depth > s.retrieval_candidates


def run(held: Held, request: SelectRequest, visible: Visible, fused: Fused) -> Candidates:
    s, pool, per_query = held.settings, visible.pool, fused.per_query
    deep = request.rerank and s.rerank_sampling != "all" and explores_deep(held)
    reach = stages.top_n(best(q.relevance for q in per_query), pool, s.exploration_depth) if deep else None
    ranked = _ranked(per_query, pool, s.exploration_depth if deep else s.retrieval_candidates, reach)
    rankings = [r[: s.retrieval_candidates] for r in ranked]
    merged = retrieval.round_robin(rankings, s.retrieval_candidates)
    reach = merged[:0] if reach is None else reach
    near = nearest(fused, visible.seen)
    label = intent(held, near)
    key = context_of(held, request, label)
    rows = _rows_read(held, request, rankings, visible.pinned, reach)
    vector = best(q.signals[VECTOR.name] for q in per_query)
    against = visible.scored  # a pin's rank and lead as if it were ranked: its confidence is its fit's
    return Candidates(
        rows=rows,
        rankings=[stages.locate(rows, r) for r in rankings],
        merged=stages.locate(rows, merged),
        per_query=[Retrieved(q.relevance[rows], _at(q.signals, rows), q.bm25_match[rows]) for q in per_query],
        in_pool=pool[rows],
        rank=confidence.best_rank([q.relevance for q in per_query], ranked, against, rows),
        lead=confidence.lead(vector, against, rows),
        relevance_top=max(
            (float(q.relevance[r[0]]) for q, r in zip(per_query, rankings, strict=True) if r.size), default=0.0
        ),
        nearest_category=None if near is None else held.catalog.categories[near],
        intent=label,
        context_key=key,
        explores_deep=deep,
    )


def best(per_query: Iterable[stages.Scores]) -> stages.Scores:
    """Each row's best score over the query's parts (a tool serves the need it fits best)."""
    result: stages.Scores = reduce(np.maximum, per_query)
    return result


def _ranked(per_query: list[Retrieved], pool: stages.Mask, depth: int, reach: stages.Rows | None) -> list[stages.Rows]:
    """Each part's top ``depth`` (the exploration depth when a slot may reach it: every row the selection reads
    from the ranking then has its rank read off one, for the cost of the candidates' partition); a plain query's is
    ``reach``, its relevance ranked to that depth already."""
    if reach is not None and len(per_query) == 1:
        return [reach]
    return [stages.top_n(q.relevance, pool, depth) for q in per_query]


def _at(signals: dict[str, stages.Scores], rows: stages.Rows) -> dict[str, stages.Scores]:
    return {name: scores[rows] for name, scores in signals.items()}


def _rows_read(
    held: Held, request: SelectRequest, rankings: list[stages.Rows], pinned: stages.Rows, reach: stages.Rows
) -> stages.Rows:
    """Each part's candidates, whose merge the rerank redoes; when reranking, also the pins, the related tools of
    each candidate (the top one's may join the reply) and the exploration depth."""
    candidates = np.concatenate(rankings)
    if not request.rerank:
        return np.unique(candidates)
    related = [r for c in np.unique(candidates).tolist() for r in held.catalog.related(c)]
    return np.unique(np.concatenate([candidates, pinned, reach, np.array(related, dtype=np.int64)]))


def nearest(fused: Fused, seen: stages.Mask) -> int | None:
    """The row of the tool nearest the query's meaning by what tools declare alone (``Fused.intent_evidence``),
    among every tool the request may see: neither the session's exclusions, the request's filters, quarantine nor
    what use taught changes it, so the same query files and reads its lessons under one key (None: nothing to go
    by)."""
    evidence = np.where(seen, fused.intent_evidence, -np.inf)
    return first_best(evidence) if np.isfinite(evidence).any() else None


TIE = 1e-6
"""Cosines this close are one: a row recomputed apart from the retrieval's product differs from it in its last bits,
and two tools with one vector (the same example queries) must not swap the label as one of them is learnt."""


def first_best(scores: stages.Scores) -> int:
    """The first row whose score is within ``TIE`` of the best: ties go to the catalog's order, whatever float
    rounding did to them."""
    return int(np.flatnonzero(scores >= scores.max() - TIE)[0])


def intent(held: Held, row: int | None) -> str:
    """The query's intent label (seed 000, 10.3) from its nearest tool: that tool (``TOOLSEL_INTENT_LABEL=tool``),
    or its category (``category``; a tool without one is its own label). The same query reads the same context
    whatever the session excluded."""
    if row is None:
        return "none"
    category = held.catalog.categories[row]
    return category if category and held.settings.intent_label == "category" else held.catalog.keys[row]
