"""Usage memory (online Tool2Vec): the queries a tool served well become its learnt examples, and its usage
vector is their recency-weighted centroid (the selectors blend it with the declared vector). A tool offered for
one part of a compound query learns that part (``outcomes.taught_with``). The texts it alone learnt from a
selection are its learnt words (the selectors index them with BM25). A review also moves each reviewed tool's
residual (``Listwise``): what tells apart the tools offered together, which a centroid of each alone cannot.

What is kept and how it is weighed is computed here (pure); ``remember`` is the one step that stores a batch's
examples and the vectors of the tools they touched, in the caller's transaction.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID, uuid4

import asyncpg
import numpy as np
import numpy.typing as npt

from toolsel.contracts import SHARED_TENANT, UsageUpdated, Verdict
from toolsel.messaging import Unavailable
from toolsel.settings import Settings
from toolsel.store import usage

Vector = npt.NDArray[np.float32]
Embed = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
"""Unit query embeddings, one row per query (the learner embeds a selection's query itself)."""
Coefficients = npt.NDArray[np.float64]
Key = tuple[int, str]
"""A tool's usage memory: (tool id, scope)."""
Total = tuple[Vector, int]
"""A sum of query vectors and how many were summed."""
POSITIVE, NEGATIVE = 1, -1
POLARITY = {Verdict.PERFECT: POSITIVE, Verdict.UNRELATED: NEGATIVE, Verdict.BROKEN: NEGATIVE}
"""What a review teaches the usage memory; a 'related' one teaches nothing, though tuning counts it positive
(``POSITIVE_VERDICTS``). A related tool is near the query but not the one to call: learnt as an example it would
pull the tool onto queries a better tool serves, learnt as a negative it would push away a tool that is close. A
tuning pair only asks the model to place the two texts near, which a related tool is."""


async def embedded(embed: Embed, queries: Sequence[str]) -> dict[str, Vector]:
    """Each query's vector. A failure that a probe shares (a text no one sent, so not cached) is the model's, not
    the queries': raised as ``Unavailable``, their events' batch is retried as it is, never dead-lettered. One the
    probe passes may be a query's own (or a batch too large): raised as it is, the batch is split to find it."""
    if not queries:
        return {}
    try:
        return dict(zip(queries, await embed(queries), strict=True))
    except Exception as error:
        if await _model_works(embed):
            raise
        raise Unavailable(f"the embedding model fails: {type(error).__name__}: {error}") from error


async def _model_works(embed: Embed) -> bool:
    """Whether the model embeds a text no cache holds (a fresh one each time)."""
    try:
        await embed([f"probe {uuid4()}"])
    except Exception:
        return False
    return True


@dataclass(frozen=True)
class Listwise:
    """One review's step on the residuals of the tools its selection offered for one query: a softmax over their
    recorded cosines x ``sharpness`` is moved towards the verdicts (the relevant tools share 1), each residual by
    ``rate x (verdict share - probability) x query``, then held within ``max_norm``. Ranking the selector's own
    candidates against each other learns what a centroid per tool cannot: the queries where two near tools part."""

    rate: float
    sharpness: float
    max_norm: float
    centred: bool = False
    """Step along the query less its scope's mean ranked query (``centres``): what every query of a scope shares
    tells no tool apart, and a step along it would move a tool for every query."""

    @classmethod
    def from_settings(cls, settings: Settings) -> "Listwise":
        return cls(
            settings.usage_residual_rate,
            settings.usage_residual_sharpness,
            settings.usage_residual_max_norm,
            settings.usage_residual_centred,
        )

    def coefficients(self, similarities: npt.NDArray[np.float64], relevant: npt.NDArray[np.bool_]) -> Coefficients:
        """``verdict share - softmax probability`` per tool; zeros unless some are relevant and some are not. A
        recorded cosine is read within what a selector can record (a cosine plus a residual at its bound)."""
        if relevant.all() or not relevant.any():
            return np.zeros(similarities.shape, dtype=np.float64)
        reach = 1.0 + self.max_norm
        logits = self.sharpness * np.clip(similarities, -reach, reach)
        p = np.exp(logits - logits.max())
        result: Coefficients = relevant / relevant.sum() - p / p.sum()
        return result

    def held(self, residual: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The residual scaled down to ``max_norm`` when it is longer."""
        norm = float(np.linalg.norm(residual))
        return residual * (self.max_norm / norm) if norm > self.max_norm else residual


@dataclass(frozen=True)
class UsageRules:
    """Whose ranking a tenant's usage teaches, how many examples a tool keeps, how fast they age, how many times
    one actor may teach a tool (by its outcomes' successes, which also move the posterior, and again by its
    reviews), and how a review moves the residuals (None: not at all)."""

    sharing: Literal["tenant", "global"]
    examples_per_tool: int
    half_life: float
    credits_per_actor: int
    listwise: Listwise | None = None
    credits_window_s: float = 0.0
    """How often an actor's credits refill (``actor``; 0: never)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> "UsageRules":
        listwise = Listwise.from_settings(settings) if settings.usage_residual_rate > 0 else None
        return cls(
            settings.usage_sharing,
            settings.usage_examples_per_tool,
            settings.usage_half_life,
            settings.learning_credits_per_actor,
            listwise,
            settings.learning_credits_window_s,
        )

    def scope(self, tenant_id: str) -> str:
        """Where a tenant's usage is kept: its own scope, or the shared one ('*') when usage is shared."""
        return SHARED_TENANT if self.sharing == "global" else tenant_id


@dataclass(frozen=True)
class Example:
    """One thing learnt: this event's selection query served (or did not serve) this tool."""

    tool_id: int
    scope: str
    event_id: UUID
    polarity: int
    query: str
    selection_id: UUID
    similarity: float | None = None
    """The tool's cosine with the query as the selection ranked it: where a review's listwise step starts (None:
    no step, see ``rankings``)."""


def distinct(examples: Sequence[Example]) -> list[Example]:
    """The first example of each (tool, scope, selection, polarity): an outcome and a review of one selection are
    one query."""
    return list({(e.tool_id, e.scope, e.selection_id, e.polarity): e for e in reversed(examples)}.values())


def recency_weights(n: int, half_life: float) -> npt.NDArray[np.float64]:
    """Weights of ``n`` examples, newest first: the k-th newest weighs 0.5 ** (k / half_life)."""
    result: npt.NDArray[np.float64] = 0.5 ** (np.arange(n, dtype=np.float64) / half_life)
    return result


def centroid(newest_first: Sequence[Vector], limit: int, half_life: float) -> Vector | None:
    """Unit recency-weighted mean of the newest ``limit`` vectors; None when there are none (or they cancel)."""
    kept = newest_first[:limit]
    if not kept:
        return None
    mean = recency_weights(len(kept), half_life) @ np.vstack(kept).astype(np.float64)
    norm = float(np.linalg.norm(mean))
    return None if norm < 1e-9 else (mean / norm).astype(np.float32)


def usage_vectors(
    examples: Mapping[Key, Sequence[usage.Found]], rules: UsageRules, residuals: Mapping[Key, Vector]
) -> list[usage.VectorRow]:
    """A vector row per (tool, scope) from its (polarity, vector, words) examples, newest first, with its new
    residual (none: the stored one is kept); a tool with no positive example has no row (nothing to blend yet: its
    negatives wait for one)."""
    rows: list[usage.VectorRow] = []
    for (tool_id, scope), found in sorted(examples.items()):
        kept = [(v, w) for p, v, w in found if p == POSITIVE][: rules.examples_per_tool]
        negatives = [v for p, v, _ in found if p == NEGATIVE][: rules.examples_per_tool]
        positive = centroid([v for v, _ in kept], rules.examples_per_tool, rules.half_life)
        if positive is not None:
            negative = centroid(negatives, rules.examples_per_tool, rules.half_life)
            words = [w for _, w in kept if w is not None]
            residual = residuals.get((tool_id, scope))
            rows.append(usage.VectorRow(tool_id, scope, positive, negative, len(kept), len(negatives), words, residual))
    return rows


def rankings(examples: Sequence[Example]) -> dict[tuple[UUID, str, str], list[Example]]:
    """The examples of one selection, scope and query, in the order given: one ranking each. A lone example (an
    outcome's call) ranks nothing against anything, and one without a recorded cosine has no ranking to step
    from: both are left out."""
    grouped: dict[tuple[UUID, str, str], list[Example]] = {}
    for e in examples:
        grouped.setdefault((e.selection_id, e.scope, e.query), []).append(e)
    return {k: r for k, r in grouped.items() if len(r) > 1 and all(e.similarity is not None for e in r)}


def ranked_totals(examples: Sequence[Example], vectors: Mapping[str, Vector]) -> dict[str, Total]:
    """Per scope, the sum and count of the queries these examples' rankings ranked (each ranking once)."""
    totals: dict[str, Total] = {}
    for _, scope, query in rankings(examples):
        total, n = totals.get(scope, (np.zeros(vectors[query].shape, dtype=np.float32), 0))
        totals[scope] = (total + vectors[query], n + 1)
    return totals


def centres(totals: Mapping[str, Total]) -> dict[str, Vector]:
    """Each scope's mean ranked query before this batch: what every query of the scope shares (a scope whose
    reviews ranked nothing yet has none, and its first rankings step along their queries)."""
    return {scope: (total.astype(np.float64) / n).astype(np.float32) for scope, (total, n) in totals.items() if n}


def stepped(
    examples: Sequence[Example],
    vectors: Mapping[str, Vector],
    residuals: Mapping[Key, Vector],
    listwise: Listwise,
    centre: Mapping[str, Vector] | None = None,
) -> dict[Key, Vector]:
    """The residuals of the tools these examples' listwise steps move, from ``residuals`` (zero where absent),
    each ranking (``rankings``) stepped in the order given along its query less its scope's ``centre`` (none:
    the query itself)."""
    moved: dict[Key, npt.NDArray[np.float64]] = {}
    for (_, scope, query), ranked in rankings(examples).items():
        similarities = np.array([e.similarity for e in ranked], dtype=np.float64)
        relevant = np.array([e.polarity == POSITIVE for e in ranked])
        coefficients = listwise.coefficients(similarities, relevant)
        if not coefficients.any():
            continue
        q = vectors[query].astype(np.float64)
        if centre is not None and scope in centre:
            q = q - centre[scope]
        for e, c in zip(ranked, coefficients, strict=True):
            key = (e.tool_id, e.scope)
            start = moved.get(key)
            if start is None:
                start = residuals[key].astype(np.float64) if key in residuals else np.zeros(q.shape, dtype=np.float64)
            moved[key] = listwise.held(start + listwise.rate * c * q)
    return {key: r.astype(np.float32) for key, r in moved.items()}


async def remember(
    conn: asyncpg.Connection, examples: Sequence[Example], vectors: Mapping[str, Vector], rules: UsageRules
) -> UsageUpdated | None:
    """Add these examples (their queries embedded in ``vectors``) and recompute the vectors of the tools they
    touched, and of the tools their selections taught before (which may lose those queries' words: see
    ``toolsel.store.usage.EXAMPLES_OF``), with the residuals the examples' listwise steps moved (the caller passes
    only the examples of events applied for the first time); what to broadcast after commit, or None when nothing
    changed (e.g. every example was known and none was a step)."""
    examples = distinct(examples)
    if not examples:
        return None
    selections = sorted({(e.selection_id, e.scope) for e in examples if e.polarity == POSITIVE})
    taught_before = await usage.taught_by(conn, selections)
    await usage.lock_tools(conn, {e.tool_id for e in examples} | {tool_id for tool_id, _ in taught_before})
    queries = {q: i for i, q in enumerate(dict.fromkeys(e.query for e in examples))}
    new = [(e.tool_id, e.scope, e.event_id, e.polarity, queries[e.query], e.selection_id) for e in examples]
    added = await usage.add_examples(conn, new, np.vstack([vectors[q] for q in queries]), list(queries))
    residuals: dict[Key, Vector] = {}
    if rules.listwise is not None:
        reviewed = sorted({(e.tool_id, e.scope) for e in examples})
        stored = await usage.residuals_of(conn, reviewed)
        centre = None
        if rules.listwise.centred:
            batch = ranked_totals(examples, vectors)
            centre = centres(await usage.query_totals(conn, sorted(batch)))
            await usage.add_query_totals(conn, batch)
        residuals = stepped(examples, vectors, stored, rules.listwise, centre)
    touched = sorted(set(added) | set(taught_before) | set(residuals))
    if not added and not residuals:
        return None
    await usage.trim_examples(conn, touched, rules.examples_per_tool)
    rows = usage_vectors(await usage.examples_of(conn, touched), rules, residuals)
    if not rows:
        return None
    return UsageUpdated(version=await usage.write_vectors(conn, rows), tools=len(rows))
