"""The selector's in-memory copy of the registry, as arrays, replaced whole when the registry changes; built
from the rows of ``toolsel.store.catalog`` by pure functions (the app does the reading)."""

import json
from bisect import bisect_left
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from toolsel.contracts.registry import PinScope
from toolsel.services.selector.policy import Rule
from toolsel.services.selector.retrieval import LexicalIndex, lexical_text, tokenize
from toolsel.services.selector.splice import Groups, Renumbering
from toolsel.services.selector.stages import Rows, epoch_seconds, tenant_mask
from toolsel.services.selector.standing import Evidence, Standing, evidence_by_tenant, standing_of, values_of
from toolsel.settings import Settings


@dataclass(frozen=True)
class Catalog:
    """Live tools (active, not deleted) with their vectors and what scoring needs. Row i is one tool."""

    keys: list[str]
    written: npt.NDArray[np.int64]
    """Each row's last write in the store (``toolsel.store.catalog.WRITTEN``), what ``stale_rows`` checks a copy
    against."""
    plugin_ids: list[str]
    names: list[str]
    tenants: npt.NDArray[np.str_]
    categories: list[str | None]
    specs: list[str]
    """The parts of each tool's declaration a selection reads (``SPEC_READ``), as JSON text (``declared``), parsed
    where a selection reads them (``spec``): ten thousand declarations kept parsed are a quarter of a million small
    objects (18 MB, and the heap they leave scattered when a copy is replaced), as text 5 MB. The rest of a
    declaration only feeds the lexical index, built once."""
    tags: list[frozenset[str]]
    vectors: npt.NDArray[np.float32]
    """One row per tool, stored a dimension at a time (Fortran order) where the copy is built from the store: the
    query's cosine with every row then streams the matrix at memory speed (``stages.cosines``)."""
    has_vector: npt.NDArray[np.bool_]
    pinned: npt.NDArray[np.bool_]
    pin_scoped: npt.NDArray[np.bool_]
    """The pins their plugin scoped (``ToolSpec.pin_scope``): they join only the answers their scope holds for, and
    are ranked like any tool in the others."""
    pin_weight: npt.NDArray[np.int64]
    quarantined: npt.NDArray[np.bool_]
    """The base standing (``standing``): on each tool's own tenant's evidence."""
    rating: npt.NDArray[np.float64]
    calls: npt.NDArray[np.float64]
    performance: npt.NDArray[np.float64]
    schema_tokens: npt.NDArray[np.int64]
    lexical: LexicalIndex
    workflow_hints: dict[tuple[str, str], str] = field(default_factory=dict)
    category_parents: dict[tuple[str, str], str | None] = field(default_factory=dict)
    page_mappings: list[tuple[str, str, str, int]] = field(default_factory=list)
    """(plugin_id, page_pattern, category, priority)."""
    evidence: dict[str, Evidence] = field(default_factory=dict)
    """Per tenant, its own evidence of shared tools, which replaces the base standing for it."""
    _standings: dict[str, Standing] = field(default_factory=dict, compare=False, repr=False)
    _words: dict[int, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    _related: dict[int, list[int]] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.keys)

    def spec(self, row: int) -> dict[str, Any]:
        """A tool's declaration as a selection reads it (``SPEC_READ``'s fields), parsed anew: a few microseconds,
        for the few rows a reply shows."""
        parsed: dict[str, Any] = json.loads(self.specs[row])
        return parsed

    def words(self, row: int) -> frozenset[str]:
        """The words of a tool's name, display name, description, tags and parameter names, as BM25 cuts a query
        (what a reason says it matched); each tool's once per catalog copy, when a reason first needs them."""
        kept = self._words.get(row)
        if kept is None:
            spec = self.spec(row)
            parameters = spec.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            named = properties if isinstance(properties, dict) else ()
            shown = (self.names[row], str(spec.get("display_name") or ""), str(spec.get("description") or ""))
            text = " ".join([*shown, *self.tags[row], *named])
            kept = self._words[row] = frozenset(tokenize([text])[0])
        return kept

    def standing(self, tenant: str) -> Standing:
        """Every row as ``tenant`` sees it: visible or not, quarantined for it or not, and what its own calls
        and ratings made of it; kept for the tenants asked most recently."""
        kept = self._standings.get(tenant)
        if kept is None:
            if len(self._standings) >= STANDINGS_KEPT:
                self._standings.clear()
            kept = standing_of(self, self.evidence.get(tenant), tenant_mask(self.tenants, tenant))
            self._standings[tenant] = kept
        return kept

    @cached_property
    def rows(self) -> dict[str, int]:
        """Tool key (``plugin/name``) -> row."""
        return dict(zip(self.keys, range(len(self.keys)), strict=True))

    @cached_property
    def category_rows(self) -> Groups:
        """``plugin/category`` (as visibility rules name categories) -> the rows of its tools; rules and page
        filters look them up here. A copy made by ``with_changes`` has it spliced from the old copy's."""
        return Groups.of(_category_labels(self, np.arange(len(self))))

    @cached_property
    def filter_rows(self) -> dict[str, Groups]:
        """What a request's filters look up, by filter: plugin, server ("" for none declared), category name and
        tag -> rows. A copy made by ``with_changes`` has them spliced from the old copy's."""
        return {name: Groups.of(labels) for name, labels in _filter_labels(self, np.arange(len(self))).items()}

    def related(self, row: int) -> list[int]:
        """A row's live related tools (the rows its plugin declares related to it, in declared order), resolved
        once per copy when a selection first reads them."""
        kept = self._related.get(row)
        if kept is None:
            names = self.spec(row).get("related_tools")
            keys = (f"{self.plugin_ids[row]}/{name}" for name in (names if isinstance(names, list) else []))
            kept = self._related[row] = [at for key in keys if (at := self.rows.get(key)) is not None]
        return kept


STANDINGS_KEPT = 64
"""Tenants whose standing a catalog copy keeps at once (one without evidence of its own costs a visibility mask;
one with some, four more arrays of the catalog's length); more, and the copy starts again."""
SPEC_READ = (
    "display_name",
    "description",
    "parameters",
    "usage_hint",
    "related_tools",
    "server",
    "execution_type",
    "execution_config",
    "pin_scope",
)
"""The declaration fields a selection reads after the catalog is built: the reply's, related tools, the server
filter, where a pin joins answers."""
NO_TAGS: frozenset[str] = frozenset()
"""Shared by every untagged tool (one empty set each would cost ten thousand objects)."""


def declared(spec: Mapping[str, object]) -> str:
    """What ``Catalog.specs`` keeps of a declaration: its ``SPEC_READ`` fields as JSON text, which parses back to
    the very values (floats included: Python's JSON writes each as the shortest text that reads back the same)."""
    return json.dumps({key: spec[key] for key in SPEC_READ if key in spec}, separators=(",", ":"))


def schema_tokens(spec: dict[str, object], tokens_per_char: float) -> int:
    """Estimated prompt tokens of the schema an agent would be sent for this tool."""
    shown = {"name": spec.get("name"), "description": spec.get("description"), "parameters": spec.get("parameters")}
    return max(1, round(len(json.dumps(shown)) * tokens_per_char))


Row = Mapping[str, Any]
"""One row of a ``toolsel.store.catalog`` query, by column name."""


def build_catalog(
    rows: Sequence[Row],
    categories: Sequence[Row],
    mappings: Sequence[Row],
    settings: Settings,
    evidence: Sequence[Row] = (),
) -> Catalog:
    """Index the live tools (with their base standing), categories, page mappings and each tenant's own evidence
    of shared tools; the caller swaps the result in atomically."""
    return with_changes(empty_catalog(settings), rows, (), categories, mappings, settings, evidence)


def empty_catalog(settings: Settings) -> Catalog:
    """A catalog of no tools, the start every copy is built from."""
    return Catalog(
        keys=[],
        written=np.zeros(0, dtype=np.int64),
        plugin_ids=[],
        names=[],
        tenants=np.array([], dtype=np.str_),
        categories=[],
        specs=[],
        tags=[],
        vectors=np.zeros((0, settings.embedding_dim), dtype=np.float32, order="F"),
        has_vector=np.zeros(0, dtype=bool),
        pinned=np.zeros(0, dtype=bool),
        pin_scoped=np.zeros(0, dtype=bool),
        pin_weight=np.zeros(0, dtype=np.int64),
        quarantined=np.zeros(0, dtype=bool),
        rating=np.zeros(0),
        calls=np.zeros(0),
        performance=np.zeros(0),
        schema_tokens=np.zeros(0, dtype=np.int64),
        lexical=LexicalIndex((), k1=settings.bm25_k1, b=settings.bm25_b),
    )


def with_changes(
    cat: Catalog,
    rows: Sequence[Row],
    gone: Collection[str],
    categories: Sequence[Row],
    mappings: Sequence[Row],
    settings: Settings,
    evidence: Sequence[Row] = (),
) -> Catalog:
    """A new copy of ``cat`` with ``rows`` (live tools, new or changed) in and the tools keyed in ``gone`` out, and
    the categories, page mappings and tenants' evidence as given: only the changed rows are parsed and tokenised,
    the others are moved over by slices and array copies, and the lookups are spliced, not regrouped. Rows stay
    ordered by pin weight (highest first), plugin and name, so a copy built up by changes equals the copy read
    whole. With no tool to change, the copy keeps its indexes and what selections cached in it (the BM25 index with
    its spelling repairs, the lookups, words and related rows)."""
    if not rows and not any(key in cat.rows for key in gone):
        kept = replace(cat, **_described(categories, mappings), evidence={}, _standings={})
        kept.evidence.update(evidence_by_tenant(evidence, cat.rows, settings))
        return _indexes_kept(kept, cat)
    changed = {f"{r['plugin_id']}/{r['name']}": r for r in rows}
    fresh = sorted(changed.values(), key=_order)
    moved = _placed(cat, [*changed, *gone], fresh)
    parsed = [_parsed(r, settings) for r in fresh]
    quarantined, rating, calls, perf = values_of(fresh, settings)
    vectors = np.zeros((len(parsed), settings.embedding_dim), dtype=np.float32)
    for i, p in enumerate(parsed):
        if p.vector is not None:
            vectors[i] = p.vector
    catalog = Catalog(
        keys=moved.listed(cat.keys, [f"{r['plugin_id']}/{r['name']}" for r in fresh]),
        written=moved.column(cat.written, np.array([r["written"] for r in fresh], dtype=np.int64)),
        plugin_ids=moved.listed(cat.plugin_ids, [r["plugin_id"] for r in fresh]),
        names=moved.listed(cat.names, [r["name"] for r in fresh]),
        tenants=moved.column(cat.tenants, np.array([r["tenant_id"] for r in fresh], dtype=np.str_)),
        categories=moved.listed(cat.categories, [r["category"] for r in fresh]),
        specs=moved.listed(cat.specs, [p.spec for p in parsed]),
        tags=moved.listed(cat.tags, [p.tags for p in parsed]),
        vectors=moved.column(cat.vectors, vectors, order="F"),
        has_vector=moved.column(cat.has_vector, [p.vector is not None for p in parsed]),
        pinned=moved.column(cat.pinned, [bool(r["is_always_pinned"]) for r in fresh]),
        pin_scoped=moved.column(
            cat.pin_scoped, [bool(r["is_always_pinned"]) and p.pin_scoped for r, p in zip(fresh, parsed, strict=True)]
        ),
        pin_weight=moved.column(cat.pin_weight, np.array([r["pin_weight"] for r in fresh], dtype=np.int64)),
        quarantined=moved.column(cat.quarantined, quarantined),
        rating=moved.column(cat.rating, rating),
        calls=moved.column(cat.calls, calls),
        performance=moved.column(cat.performance, perf),
        schema_tokens=moved.column(cat.schema_tokens, np.array([p.schema_tokens for p in parsed], dtype=np.int64)),
        lexical=cat.lexical.with_documents(moved, [p.text for p in parsed]),
        **_described(categories, mappings),
    )
    # before anyone holds the copy: the lookups spliced from the old copy's, and each tenant's evidence found
    # through the copy's own index of rows
    vars(catalog)["category_rows"] = cat.category_rows.spliced(moved, _category_labels(catalog, moved.added))
    labels = _filter_labels(catalog, moved.added)
    vars(catalog)["filter_rows"] = {name: rows.spliced(moved, labels[name]) for name, rows in cat.filter_rows.items()}
    catalog.evidence.update(evidence_by_tenant(evidence, catalog.rows, settings))
    return catalog


def _described(categories: Sequence[Row], mappings: Sequence[Row]) -> dict[str, Any]:
    """A copy's fields from the categories and page mappings."""
    return {
        "workflow_hints": {(c["plugin_id"], c["name"]): c["workflow_hint"] for c in categories if c["workflow_hint"]},
        "category_parents": {(c["plugin_id"], c["name"]): c["parent"] for c in categories},
        "page_mappings": [(m["plugin_id"], m["page_pattern"], m["category"], m["priority"]) for m in mappings],
    }


def rechecked(
    cat: Catalog,
    rows: Sequence[Row],
    gone: Collection[str],
    categories: Sequence[Row],
    mappings: Sequence[Row],
    base: Sequence[Row],
    evidence: Sequence[Row],
    settings: Settings,
) -> Catalog:
    """The copy after the periodic check: the tools it found stale (``stale_rows``) spliced in, the categories,
    page mappings and standing as read now. Where no tool changed (nearly every check) the copy keeps its
    indexes and caches (``with_changes``)."""
    return with_standing(with_changes(cat, rows, gone, categories, mappings, settings), base, evidence, settings)


def unseen(cat: Catalog, rows: Sequence[Row]) -> list[Row]:
    """Of ``rows`` (tools as the store reads them, with their last write), those whose write this copy has not taken
    in: a broadcast's lookback reads again the tools written just before the copy's version, and during a sync of
    thousands of tools most of them are in it already."""
    return [r for r in rows if _lacks(cat, f"{r['plugin_id']}/{r['name']}", r["written"])]


def stale_rows(cat: Catalog, writes: Sequence[Row]) -> tuple[dict[int, str], set[str]]:
    """Against each live tool's ``id``, ``key`` and last write (``written``), as the store holds them now: the tools
    this copy lacks or holds another write of (id -> key), and the keys of the rows it holds that are no longer
    live. Reading those few rows and splicing them in (``with_changes``) brings the copy to the store's state, as
    reading it whole would, for the cost of the keys."""
    stale = {r["id"]: r["key"] for r in writes if _lacks(cat, r["key"], r["written"])}
    gone = set(cat.keys).difference(r["key"] for r in writes)
    return stale, gone


def _lacks(cat: Catalog, key: str, written: int) -> bool:
    """Whether this copy lacks the tool ``key`` or holds another write of it than ``written``."""
    row = cat.rows.get(key)
    return row is None or int(cat.written[row]) != written


def _order(row: Row) -> tuple[int, str, str]:
    """Where a tool's row sorts in a catalog copy."""
    return -int(row["pin_weight"]), str(row["plugin_id"]), str(row["name"])


def _placed(cat: Catalog, dropped: Sequence[str], fresh: Sequence[Row]) -> Renumbering:
    """The rows of ``cat``'s next copy: its own less the ``dropped`` keys, and ``fresh`` (sorted) each placed
    where it sorts among them by a binary search over the kept rows, which are in order already."""
    keep = np.ones(len(cat), dtype=bool)
    keep[[row for key in dropped if (row := cat.rows.get(key)) is not None]] = False
    kept = np.flatnonzero(keep)

    def order(row: int) -> tuple[int, str, str]:
        return -int(cat.pin_weight[row]), cat.plugin_ids[row], cat.names[row]

    at = [bisect_left(kept, _order(r), key=order) for r in fresh]
    return Renumbering.of(np.insert(kept, at, -1), len(cat))


def _category_labels(cat: Catalog, rows: Rows) -> list[tuple[str, ...]]:
    """``plugin/category`` of each row (as visibility rules name categories), none for a row without one."""
    return [(f"{cat.plugin_ids[r]}/{c}",) if (c := cat.categories[r]) else () for r in rows.tolist()]


def _filter_labels(cat: Catalog, rows: Rows) -> dict[str, list[Iterable[str]]]:
    """What a request's filters look up, by filter, for each row: its plugin, server ("" for none declared),
    category name and tags."""
    at = rows.tolist()
    return {
        "plugins": [(cat.plugin_ids[r],) for r in at],
        "servers": [(str(cat.spec(r).get("server") or ""),) for r in at],
        "categories": [(c,) if (c := cat.categories[r]) else () for r in at],
        "tags": [cat.tags[r] for r in at],
    }


@dataclass(frozen=True)
class _Parsed:
    """What a catalog keeps of one tool's row besides its columns."""

    spec: str
    """Its ``declared`` parts."""
    tags: frozenset[str]
    text: str
    """Its lexical text, for the BM25 index."""
    schema_tokens: int
    vector: npt.NDArray[np.float32] | None
    pin_scoped: bool
    """Whether it declares a pin scope."""


def _parsed(row: Row, settings: Settings) -> _Parsed:
    spec = json.loads(row["spec"])  # the declaration whole only while its row is read
    return _Parsed(
        spec=declared(spec),
        tags=frozenset(spec_tags) if (spec_tags := spec.get("tags")) else NO_TAGS,
        text=lexical_text(spec),
        schema_tokens=schema_tokens(spec, settings.tokens_per_char),
        vector=None if row["embedding"] is None else row["embedding"].to_numpy(),
        pin_scoped=scoped(spec.get("pin_scope")),
    )


def scoped(scope: object) -> bool:
    """Whether a declaration's ``pin_scope`` limits where its pin joins: a scope that names nothing is none."""
    return isinstance(scope, dict) and any(scope.get(key) not in (None, []) for key in PinScope.model_fields)


def with_standing(cat: Catalog, base: Sequence[Row], evidence: Sequence[Row], settings: Settings) -> Catalog:
    """The same catalog with the standing read now (``base``: rows with ``key`` and the base standing's columns;
    ``evidence``: each tenant's own, as ``build_catalog`` takes it). What a tool's health changes is all that is
    read again: the registry's parts, the lexical index and the indexes built on them are the same objects, so a
    quarantine costs no rebuild of the catalog. Tools not in this copy are left to the next registry reload."""
    known = [r for r in base if r["key"] in cat.rows]
    at = np.array([cat.rows[r["key"]] for r in known], dtype=np.int64)
    new_quarantined, new_rating, new_calls, new_perf = values_of(known, settings)
    quarantined, rating = cat.quarantined.copy(), cat.rating.copy()
    calls, perf = cat.calls.copy(), cat.performance.copy()
    quarantined[at], rating[at], calls[at], perf[at] = new_quarantined, new_rating, new_calls, new_perf
    fresh = replace(
        cat,
        quarantined=quarantined,
        rating=rating,
        calls=calls,
        performance=perf,
        evidence=evidence_by_tenant(evidence, cat.rows, settings),
        _standings={},
    )
    return _indexes_kept(fresh, cat)


def _indexes_kept(fresh: Catalog, cat: Catalog) -> Catalog:
    """``fresh``, a copy of ``cat``'s rows, with the indexes ``cat`` already built (they stay built)."""
    for name, value in vars(cat).items():
        if isinstance(getattr(Catalog, name, None), cached_property):
            vars(fresh)[name] = value
    return fresh


Posterior = tuple[float, float, float]
"""(alpha, beta, last success in seconds since the epoch, NaN for never) of one tool in one context."""
Posteriors = dict[tuple[str, str], dict[str, Posterior]]
"""(tenant, context key) -> tool key -> posterior: a request reads only its own tenant's context, so what was
learnt on one page or for one tenant lifts nothing elsewhere."""


def posterior(alpha: float, beta: float, last_success_at: datetime | None) -> Posterior:
    return alpha, beta, float(epoch_seconds([last_success_at])[0])


@dataclass
class Learnt:
    """The posteriors a selector holds, with how many contexts each tenant has learnt under, counted as contexts
    are added (never over the posteriors): what the bound on a tenant's contexts (``contexts_per_tenant_max``)
    reads on every request."""

    posteriors: Posteriors = field(default_factory=dict)
    contexts: dict[str, int] = field(default_factory=dict)
    """Tenant -> how many of the keys of ``posteriors`` are its."""

    def of(self, tenant: str, context: str) -> dict[str, Posterior]:
        """The posteriors of one tenant's context, made (and counted) when it is new."""
        tools = self.posteriors.get((tenant, context))
        if tools is None:
            tools = self.posteriors[(tenant, context)] = {}
            self.contexts[tenant] = self.contexts.get(tenant, 0) + 1
        return tools


def build_posteriors(rows: Sequence[Row]) -> Learnt:
    """The Beta posteriors of every tool with learnt statistics, by tenant and context."""
    learnt = Learnt()
    for r in rows:
        learnt.of(r["tenant_id"], r["context_key"])[r["key"]] = posterior(r["alpha"], r["beta"], r["last_success_at"])
    return learnt


def merge_posteriors(learnt: Learnt, recent: Learnt) -> int:
    """Take ``recent`` (``build_posteriors`` of the posteriors written lately) into ``learnt`` in place, as
    broadcasts are taken in; how many posteriors it then holds."""
    for (tenant, context), tools in recent.posteriors.items():
        learnt.of(tenant, context).update(tools)
    return sum(len(tools) for tools in learnt.posteriors.values())


def build_rules(rows: Sequence[Row]) -> list[Rule]:
    """Visibility rules, in the rows' order (highest priority first)."""
    return [
        Rule(
            r["tenant_id"],
            r["rule_type"],
            r["effect"],
            r["target_kind"],
            r["target"],
            json.loads(r["conditions"]),
            r["priority"],
            r["origin"],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class ReviewIndex:
    """The review index (seed 002): query centroids, the tool each was reviewed for, its aggregate fitness.
    Entries are kept grouped by scope, so that a scope's entries are slices (views) of the arrays: a request
    searches its own without copying them."""

    keys: list[str]
    centroids: npt.NDArray[np.float32]
    fitness: npt.NDArray[np.float64]
    scopes: npt.NDArray[np.str_]
    """Whose reviews each entry holds (a tenant, or '*' when learning is shared): a request reads only its own."""
    spans: dict[str, slice] = field(init=False)
    """Each scope's entries."""

    def __post_init__(self) -> None:
        order = np.argsort(self.scopes, kind="stable")
        scopes = self.scopes[order]
        grouped = {
            "keys": [self.keys[i] for i in order.tolist()],
            "centroids": self.centroids[order],
            "fitness": self.fitness[order],
            "scopes": scopes,
        }
        for name, value in grouped.items():  # a frozen copy, grouped once as it is made
            object.__setattr__(self, name, value)
        names, starts = np.unique(scopes, return_index=True)
        ends = np.append(starts[1:], scopes.size)[: starts.size]
        spans = {str(n): slice(int(a), int(b)) for n, a, b in zip(names, starts, ends, strict=True)}
        object.__setattr__(self, "spans", spans)


def build_review_index(rows: Sequence[Row], dim: int) -> ReviewIndex:
    centroids = np.zeros((len(rows), dim), dtype=np.float32)
    for i, r in enumerate(rows):
        centroids[i] = r["centroid"].to_numpy()
    fitness = np.array([r["fitness"] for r in rows], dtype=np.float64)
    return ReviewIndex(
        [r["key"] for r in rows], centroids, fitness, np.array([r["scope"] for r in rows], dtype=np.str_)
    )
