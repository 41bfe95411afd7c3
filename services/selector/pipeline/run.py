"""The pipeline assembled: one selection through its stages in order (the package's docstring lists them), each
stage timed, the hot-query cache around retrieval, fusion and the candidates."""

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from toolsel.contracts import SelectionEvent, SelectReply, SelectRequest
from toolsel.services.selector.pipeline import (
    budget,
    candidates,
    choose,
    count,
    fuse,
    reason,
    reply,
    rerank,
    retrieve,
    visibility,
)
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.retrieval_cache import RetrievalCache, Source, freeze, pool_digest
from toolsel.services.selector.spelling import repaired

P = ParamSpec("P")
R = TypeVar("R")

STAGES = (
    "visibility",
    "spelling",
    "retrieve",
    "fuse",
    "candidates",
    "rerank",
    "count",
    "choose",
    "budget",
    "reason",
    "reply",
)
"""The stages in the order they run, as ``Selection.stages_ms`` names them."""


@dataclass(frozen=True)
class Selection:
    """One selection's reply and event, with what each stage handed on (for the scripts that study a stage) and
    the milliseconds each took (``retrieve``, ``fuse`` and ``candidates`` absent when the hot-query cache answered)."""

    reply: SelectReply
    event: SelectionEvent
    visible: visibility.Visible
    fused: fuse.Fused
    candidates: candidates.Candidates
    scored: rerank.Scored
    choice: choose.Choice
    stages_ms: dict[str, float]


@dataclass
class _Timed:
    """Runs stages, keeping each one's milliseconds by name."""

    ms: dict[str, float] = field(default_factory=dict)

    def __call__(self, name: str, stage: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        began = time.perf_counter()
        out = stage(*args, **kwargs)
        self.ms[name] = (time.perf_counter() - began) * 1000
        return out


@dataclass(frozen=True)
class Hot:
    """What the hot-query cache keeps of a repeated query: its retrieval and fusion, and its candidates as each
    variant of the request that reads them alike found them (``candidates.variant``)."""

    fused: fuse.Fused
    variants: dict[Hashable, candidates.Candidates] = field(default_factory=dict)


HotQueries = RetrievalCache[Hot]
"""The hot-query cache: a repeated query's retrieval, fusion and candidates while their sources are unchanged."""
VARIANTS_KEPT = 4
"""Candidates kept per cached query: requests of one query that differ in their tier, page, pins or rerank."""


def select(
    held: Held,
    request: SelectRequest,
    started: float,
    hot: HotQueries,
    sources: tuple[Source, ...],
    stale: list[str],
) -> Selection:
    """``sources``: what the cached retrieval must have been computed from (``RetrievalCache``); ``stale``: the
    state the selector could not refresh, which the reply names first among what degraded."""
    timed = _Timed()
    visible = timed("visibility", visibility.run, held, request)
    text = timed("spelling", repaired, held.catalog, request, held.settings)
    parts, queries = retrieve.queries_of(held.settings, text)
    key: Hashable = (tuple(queries), request.retrieval, held.scope, pool_digest(visible.scored))
    kept = hot.get(key, sources)
    if kept is None:
        found = timed("retrieve", retrieve.run, held, queries, visible.scored, request.retrieval)
        kept = Hot(timed("fuse", fuse.run, held, found))
        if not kept.fused.degraded:  # a degraded retrieval is not kept
            freeze(*kept.fused.arrays())
            hot.put(key, sources, kept)
    fused, variant = kept.fused, candidates.variant(request, visible)
    found_rows = kept.variants.get(variant)
    if found_rows is None:
        found_rows = timed("candidates", candidates.run, held, request, visible, fused)
        if len(kept.variants) < VARIANTS_KEPT:
            freeze(*found_rows.arrays())
            kept.variants[variant] = found_rows
    scored = timed("rerank", rerank.run, held, request, found_rows, fused.query_vector)
    k = timed("count", count.run, held, request, found_rows, scored)
    chosen = timed("choose", choose.run, held, request, visible, found_rows, scored, k)
    choice = timed("budget", budget.run, held, request, chosen)
    reasons = timed("reason", reason.run, held, request, found_rows, scored, choice)
    degraded = [*stale, *visible.degraded, *fused.degraded, *scored.degraded]
    answer, event = timed(
        "reply",
        reply.run,
        held,
        request,
        visible,
        found_rows,
        scored,
        choice,
        reasons,
        fused.method,
        parts,
        degraded,
        started,
    )
    return Selection(answer, event, visible, fused, found_rows, scored, choice, timed.ms)
