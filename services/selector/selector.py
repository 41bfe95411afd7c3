"""The selector: what a selection reads, held in memory and kept current by the app, and the pipeline run over
it (``pipeline``: the stages in order), request in, reply and selection event out."""

import time
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from toolsel.contracts import SelectionEvent, SelectReply, SelectRequest
from toolsel.embedder import Embedder
from toolsel.services.selector import spelling, stages
from toolsel.services.selector.catalog import Catalog, Learnt, ReviewIndex, posterior
from toolsel.services.selector.history import UserHistory
from toolsel.services.selector.pipeline import retrieve
from toolsel.services.selector.pipeline import run as pipeline
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.policy import Rule, TenantRules
from toolsel.services.selector.signals.base import ReviewLookup
from toolsel.services.selector.signals.bm25 import BM25
from toolsel.services.selector.signals.history import HISTORY
from toolsel.services.selector.signals.registry import RETRIEVAL
from toolsel.services.selector.usage import Blending, UsageMemory, scope_of
from toolsel.settings import Settings


@dataclass
class Selector:
    """Holds what a selection reads and answers from memory; the app keeps each part current from events."""

    settings: Settings
    catalog: Catalog
    embedder: Embedder | None
    learnt: Learnt = field(default_factory=Learnt)
    usage: UsageMemory = field(default_factory=UsageMemory)
    rules: list[Rule] = field(default_factory=list)
    reviews: ReviewIndex | None = None
    history: UserHistory = field(init=False)
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    degraded_sources: set[str] = field(default_factory=set)
    """State that could not be refreshed (e.g. ``store`` while PostgreSQL is down): answers carry on from
    the last copy and say so."""
    _review_rows_for: tuple[Catalog, ReviewIndex] | None = None
    """The copies the cached rows were computed for (held, not their ids: a freed copy's id is reused)."""
    _review_rows_cache: stages.Rows = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _rules_by_tenant: tuple[list[Rule], TenantRules] | None = None
    """The rules grouped by tenant, and the list they were grouped from (replaced whole on each reload)."""
    _hot: pipeline.HotQueries = field(init=False)
    """The hot-query cache: a repeated query's retrieval while its sources are unchanged."""
    _counted: list[str] = field(init=False)
    """The retrieval signals beside BM25 worth computing: weighed in the fusion or shown in the breakdown (one
    at weight 0 that shows nowhere, the review index's by default, would cost a search per query for nothing)."""

    def __post_init__(self) -> None:
        if self.settings.query_spelling:
            spelling.english()  # loaded now (half a second, once a process), not in the first misspelt request
        self._hot = pipeline.HotQueries(self.settings.retrieval_cache_size)
        self.history = UserHistory(self.settings)
        weights = self.settings.fusion_weights
        self._counted = [
            name
            for name, signal in RETRIEVAL.items()
            if name != BM25.name and (weights.get(name, 0.0) > 0 or signal.field is not None)
        ]

    def select(self, request: SelectRequest, started: float | None = None) -> tuple[SelectReply, SelectionEvent]:
        """The reply and the event that records it; ``started`` (``time.perf_counter``) is when handling began, if
        before this call (the query embedded ahead): the reply's ``latency_ms`` counts from it."""
        selection = self.run(request, started)
        return selection.reply, selection.event

    def run(self, request: SelectRequest, started: float | None = None) -> pipeline.Selection:
        """``select`` with what each stage handed on and how long it took."""
        started = time.perf_counter() if started is None else started
        held = self._held(request)
        sources = (held.catalog, self.reviews if HISTORY.name in self._counted else None, held.usage)
        return pipeline.select(held, request, started, self._hot, sources, sorted(self.degraded_sources))

    def to_embed(self, request: SelectRequest) -> list[str]:
        """What the model reads for this request (the query, its parts, its sentences) when it has not cached
        their vectors: the app embeds them in a worker thread first, so that ``select`` finds them cached. Empty
        when they are cached, and when BM25 answers alone, or may (its fast path decides per query whether the
        vector is needed at all)."""
        if self.embedder is None or request.retrieval == "bm25" or self.settings.bm25_fast_path:
            return []
        texts = self.reads(request)
        return [] if self.embedder.cached(texts[0], texts[1:]) else texts

    def repaired(self, request: SelectRequest) -> str:
        """The request's query as the spelling stage repairs it (kept, where the selection finds it)."""
        return spelling.repaired(self.catalog, request, self.settings)

    def repaired_at_once(self, request: SelectRequest) -> str | None:
        """``repaired`` where it takes no search of the catalog's words; None where it would."""
        return spelling.repaired_at_once(self.catalog, request, self.settings)

    def reads(self, request: SelectRequest) -> list[str]:
        """What the model reads for this request when its vectors are wanted: the query as the spelling stage
        repairs it, its parts, its sentences."""
        text = self.repaired(request)
        queries = retrieve.queries_of(self.settings, text)[1]
        return retrieve.read(queries, retrieve.sentences_of(self.settings, queries[0]))

    def learn(
        self, tool_key: str, tenant_id: str, context_key: str, alpha: float, beta: float, last_success: datetime | None
    ) -> None:
        """Take in one posterior the learner committed."""
        self.learnt.of(tenant_id, context_key)[tool_key] = posterior(alpha, beta, last_success)

    def _held(self, request: SelectRequest) -> Held:
        """The copies this request reads, as they are now, seen from its scope."""
        s, cat = self.settings, self.catalog
        scope = scope_of(request.tenant_id, s.usage_sharing)
        return Held(
            settings=s,
            catalog=cat,
            embedder=self.embedder,
            posteriors=self.learnt.posteriors,
            contexts=self.learnt.contexts.get(request.tenant_id, 0),
            rules=self._rules_of(request.tenant_id),
            history=self.history,
            scope=scope,
            reviews=self._review_lookup(scope),
            usage=self.usage.view(cat, scope, Blending(s.usage_declared_weight, s.usage_declared_prior)),
            counted=self._counted,
            rng=self._rng(request),
        )

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

    def _rules_of(self, tenant: str) -> list[Rule]:
        """The rules that may apply to ``tenant``'s requests, grouped again only when the rules were replaced."""
        grouped = self._rules_by_tenant
        if grouped is None or grouped[0] is not self.rules:
            grouped = self._rules_by_tenant = (self.rules, TenantRules.of(self.rules))
        return grouped[1].of_tenant(tenant)

    def _rng(self, request: SelectRequest) -> np.random.Generator | None:
        """The request's randomness (seeded when it gives a seed); None when sampling is off."""
        if not self.settings.thompson_sampling:
            return None
        return np.random.default_rng(request.seed) if request.seed is not None else self.rng
