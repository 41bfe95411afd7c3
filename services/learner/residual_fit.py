"""Residuals fitted to a scope's usage examples: what a tune (and a model switch) adds to the online steps.

A review's listwise step (``usage.Listwise``) moves the residuals of the tools one selection offered, once, as the
review arrives. Fitted together, the same examples teach more: a softmax over every tool the scope sees, each
example's query scored against each tool's blended vector plus its residual, minimised by full-batch gradient
steps; only the tools the scope learnt move, each residual held within the online bound. Offline, on metatool's
stream (``scripts/usage_representations.py``, vectors alone), it took held-out NDCG@10 from the centroid blend's
0.863 to 0.884.

A fit is kept only where it wins. It is first fitted on the scope's older queries and measured on the newest share
(NDCG@10 of each query's served tools) against the blended vectors alone, both rebuilt from the older queries
(``Problem.base_before``); only a fit better by the margin is fitted again on every query and written, in place
of the residuals the online steps made. Those cannot be measured on the newest queries: the steps learnt from
the newest queries' own reviews (measured so, metatool's stored residuals scored 0.955 on them and the fit 0.861,
where on queries neither saw the fit is the better). Where each tool was learnt from a query or two (large
catalogs, short streams) a fit learns those queries rather than the tools, loses to the blend on the newest, and
the online residuals stay.

Tenancy: a scope is fitted only on its own examples over the tools it sees (a tenant's scope: the shared tools
and its own; the shared scope of ``usage_sharing = "global"``: the shared tools), and only its own residuals are
written, so a fit never moves what another tenant is answered.
"""

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from toolsel.blending import Blending, blend
from toolsel.contracts import SHARED_TENANT
from toolsel.services.learner.usage import centroid
from toolsel.settings import Settings
from toolsel.store import usage

Matrix = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]
CHUNK = 2048
"""Examples scored at once: a chunk's scores over a 10,000-tool catalog take 80 MB."""
RANKED = 10
"""NDCG's cut-off."""


@dataclass(frozen=True)
class Fit:
    """How residuals are fitted (``sharpness``, ``steps``, ``rate``, ``max_norm``) and judged (the newest
    ``holdout_share`` of the examples, a ``margin`` of NDCG@10 to win by), and how the learner blends a tool's
    vector from its examples (``blending``, its newest ``examples_per_tool`` weighed by ``half_life``), which
    the judgement rebuilds without the newest queries."""

    sharpness: float
    steps: int
    rate: float
    max_norm: float
    holdout_share: float
    margin: float
    blending: Blending
    examples_per_tool: int
    half_life: float

    @classmethod
    def from_settings(cls, settings: Settings) -> "Fit":
        return cls(
            settings.tune_fit_sharpness,
            settings.tune_fit_steps,
            settings.tune_fit_rate,
            settings.usage_residual_max_norm,
            settings.tune_holdout_share,
            settings.tune_margin,
            Blending.from_settings(settings),
            settings.usage_examples_per_tool,
            settings.usage_half_life,
        )


@dataclass(frozen=True)
class Examples:
    """A scope's examples as a fitting problem: one row per distinct query, oldest first; ``targets[i]`` shares 1
    among the tools (columns) that served query ``i``."""

    queries: Matrix
    targets: Matrix

    def __len__(self) -> int:
        return int(self.queries.shape[0])

    def part(self, rows: slice) -> "Examples":
        return Examples(self.queries[rows], self.targets[rows])


def held(residuals: Matrix, max_norm: float) -> Matrix:
    """Each row scaled down to ``max_norm`` where it is longer."""
    norms = np.linalg.norm(residuals, axis=1, keepdims=True)
    result: Matrix = (residuals * np.minimum(1.0, max_norm / np.maximum(norms, 1e-12))).astype(np.float32)
    return result


def softmax_gradient(examples: Examples, scored: Matrix, sharpness: float) -> Matrix:
    """The gradient, with respect to each tool's scored vector, of the mean cross-entropy between the targets
    and the softmax of ``sharpness`` x each query's scores over every tool."""
    gradient = np.zeros(scored.shape, dtype=np.float32)
    for start in range(0, len(examples), CHUNK):
        chunk = examples.part(slice(start, start + CHUNK))
        logits = sharpness * (chunk.queries @ scored.T)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        gradient += (p - chunk.targets).T @ chunk.queries
    result: Matrix = gradient * np.float32(sharpness / max(len(examples), 1))
    return result


def fitted(examples: Examples, base: Matrix, movable: Mask, fit: Fit) -> Matrix:
    """Residuals (one row per tool, zero where not ``movable``) fitted from zero so that ``base + residuals``
    ranks each example's tools first, by ``fit.steps`` full-batch gradient steps."""
    residuals = np.zeros(base.shape, dtype=np.float32)
    moving = movable.astype(np.float32)[:, None]
    for _ in range(fit.steps):
        step = softmax_gradient(examples, base + residuals, fit.sharpness)
        residuals = held(residuals - fit.rate * step * moving, fit.max_norm)
    return residuals


def ndcg_at_10(examples: Examples, scored: Matrix) -> float:
    """Mean NDCG@10 of the examples' served tools when every tool is ranked by ``query . scored``."""
    if not len(examples):
        return 0.0
    discounts = 1.0 / np.log2(np.arange(2, RANKED + 2))
    total = 0.0
    for start in range(0, len(examples), CHUNK):
        chunk = examples.part(slice(start, start + CHUNK))
        scores = chunk.queries @ scored.T
        depth = min(RANKED, scores.shape[1])
        top = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
        order = np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), axis=1, kind="stable"), 1)
        relevant = chunk.targets > 0
        gains = np.take_along_axis(relevant, order, 1) @ discounts[:depth]
        ideal = np.cumsum(discounts)[np.minimum(relevant.sum(axis=1), RANKED) - 1]
        total += float((gains / ideal).sum())
    return total / len(examples)


@dataclass(frozen=True)
class Judged:
    """A scope's fit against the blended vectors alone, both measured on its newest queries."""

    examples: int
    held_back: int
    blended: float
    fitted: float
    wins: bool


@dataclass(frozen=True)
class Problem:
    """One scope read for a fit: its distinct queries over the tools it sees (``tool_ids``, the columns), each
    tool's declared and blended vectors, which tools it learnt, and which query taught which tool (``taught``:
    (column, query row) per positive example, oldest first)."""

    tool_ids: list[int]
    examples: Examples
    declared: Matrix
    base: Matrix
    movable: Mask
    taught: list[tuple[int, int]]

    def base_before(self, cut: int, fit: Fit) -> Matrix:
        """Each tool's blended vector made, as the learner makes it, from only its examples of the queries before
        row ``cut``: the newest queries are judged against this, so their own examples do not lift the vectors
        they are measured with (a tool with no earlier example keeps its declared vector)."""
        base = self.declared.copy()
        newest_first: dict[int, list[Matrix]] = {}
        for column, row in reversed(self.taught):
            if row < cut:
                newest_first.setdefault(column, []).append(self.examples.queries[row])
        for column, vectors in newest_first.items():
            mean = centroid(vectors, fit.examples_per_tool, fit.half_life)
            if mean is not None:
                weight = fit.blending.declared_weights(np.array([min(len(vectors), fit.examples_per_tool)]))
                base[column] = blend(self.declared[column : column + 1], mean[None, :], weight)[0]
        return base


def judge(found: Problem, fit: Fit) -> Judged:
    """Fit on all but the newest ``holdout_share`` of the queries, and measure that fit and the blended vectors
    alone on the newest, both blended from the older queries only."""
    examples = found.examples
    cut = len(examples) - math.ceil(fit.holdout_share * len(examples))
    older, newest = examples.part(slice(0, cut)), examples.part(slice(cut, None))
    if not len(older) or not len(newest):
        return Judged(len(examples), len(newest), 0.0, 0.0, False)
    base = found.base_before(cut, fit)
    blended = ndcg_at_10(newest, base)
    candidate = ndcg_at_10(newest, base + fitted(older, base, found.movable, fit))
    return Judged(len(examples), len(newest), blended, candidate, candidate > blended + fit.margin)


def problem(
    visible: Sequence[tuple[int, Matrix]],
    learnt: Sequence[tuple[int, Matrix, int]],
    positives: Sequence[tuple[int, UUID, Matrix]],
    blending: Blending,
) -> Problem | None:
    """The fitting problem of a scope from its store rows (``toolsel.store.usage``): visible tools, learnt
    vectors, positive examples oldest first. A query is one row however often it was asked (the tools that served
    it share its target), placed by its newest example, so a query held back is never also fitted on; None when
    no example names a visible tool."""
    if not visible:
        return None
    tool_ids = [tool_id for tool_id, _ in visible]
    column = {tool_id: i for i, tool_id in enumerate(tool_ids)}
    declared = np.vstack([vector for _, vector in visible]).astype(np.float32)
    base, movable = declared.copy(), np.zeros(len(tool_ids), dtype=bool)
    rows = [(column[t], mean, n) for t, mean, n in learnt if t in column]
    if rows:
        at = np.array([row for row, _, _ in rows])
        weights = blending.declared_weights(np.array([n for _, _, n in rows], dtype=np.int64))
        base[at] = blend(declared[at], np.vstack([c for _, c, _ in rows]), weights)
        movable[at] = True
    served: dict[bytes, tuple[Matrix, set[int]]] = {}
    examples: list[tuple[int, bytes]] = []
    for tool_id, _, vector in positives:
        if tool_id in column:
            key = vector.tobytes()
            _, columns = entry = served.pop(key, (vector, set()))
            columns.add(column[tool_id])
            served[key] = entry  # last: a query asked again is as new as its newest example
            examples.append((column[tool_id], key))
    if not served:
        return None
    queries = np.vstack([vector for vector, _ in served.values()]).astype(np.float32)
    targets = np.zeros((len(served), len(tool_ids)), dtype=np.float32)
    for i, (_, columns) in enumerate(served.values()):
        targets[i, sorted(columns)] = 1.0 / len(columns)
    row_of = {key: i for i, key in enumerate(served)}
    taught = [(c, row_of[key]) for c, key in examples]
    return Problem(tool_ids, Examples(queries, targets), declared, base, movable, taught)


@dataclass(frozen=True)
class Refitted:
    """What a fit did in one scope: how it was judged, how many residuals it wrote under which usage version
    (0 and None: it lost)."""

    scope: str
    judged: Judged
    written: int = 0
    version: int | None = None


async def refit_scope(conn: asyncpg.Connection, scope: str, fit: Fit) -> Refitted | None:
    """Fit one scope's residuals and write them where the fit wins; None when it has no example to fit on."""
    tenants = [SHARED_TENANT] if scope == SHARED_TENANT else [SHARED_TENANT, scope]
    found = problem(
        await usage.visible_vectors(conn, tenants),
        await usage.scope_vectors(conn, scope),
        await usage.scope_positives(conn, scope),
        fit.blending,
    )
    if found is None:
        return None
    judged = await asyncio.to_thread(judge, found, fit)
    if not judged.wins:
        return Refitted(scope, judged)
    residuals = await asyncio.to_thread(fitted, found.examples, found.base, found.movable, fit)
    moved = {found.tool_ids[i]: residuals[i] for i in np.flatnonzero(found.movable)}
    async with conn.transaction():
        await usage.lock_tools(conn, moved)
        version = await usage.set_residuals(conn, scope, moved)
    return Refitted(scope, judged, len(moved), version)


async def refit_residuals(pool: asyncpg.Pool, fit: Fit) -> list[Refitted]:
    """Every scope's fit, judged and written where it wins. Selectors take written residuals in at their next
    usage check (their periodic read of the vectors written since)."""
    async with pool.acquire() as conn:
        done = [await refit_scope(conn, scope, fit) for scope in await usage.scopes_learnt(conn)]
    return [r for r in done if r is not None]
