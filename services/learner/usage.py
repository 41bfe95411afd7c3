"""Usage memory (online Tool2Vec): the queries a tool served well become its learnt examples, and its usage
vector is their recency-weighted centroid (the selectors blend it with the declared vector). A tool offered for
one part of a compound query learns that part (``outcomes.taught_with``). The texts it alone learnt from a
selection are its learnt words (the selectors index them with BM25).

What is kept and how it is weighed is computed here (pure); ``remember`` is the one step that stores a batch's
examples and the vectors of the tools they touched, in the caller's transaction.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from contracts import SHARED_TENANT, UsageUpdated, Verdict
from toolsel.settings import Settings
from toolsel.store import usage

Vector = npt.NDArray[np.float32]
Embed = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
"""Unit query embeddings, one row per query (the learner embeds a selection's query itself)."""
POSITIVE, NEGATIVE = 1, -1
POLARITY = {Verdict.PERFECT: POSITIVE, Verdict.UNRELATED: NEGATIVE, Verdict.BROKEN: NEGATIVE}
"""What a review teaches the usage memory; a 'related' one teaches nothing."""


@dataclass(frozen=True)
class UsageRules:
    """Whose ranking a tenant's usage teaches, how many examples a tool keeps, how fast they age."""

    sharing: Literal["tenant", "global"]
    examples_per_tool: int
    half_life: float

    @classmethod
    def from_settings(cls, settings: Settings) -> "UsageRules":
        return cls(settings.usage_sharing, settings.usage_examples_per_tool, settings.usage_half_life)

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
    examples: Mapping[tuple[int, str], Sequence[usage.Found]], rules: UsageRules
) -> list[usage.VectorRow]:
    """A vector row per (tool, scope) from its (polarity, vector, words) examples, newest first; a tool with no
    positive example has no row (nothing to blend yet: its negatives wait for one)."""
    rows: list[usage.VectorRow] = []
    for (tool_id, scope), found in sorted(examples.items()):
        kept = [(v, w) for p, v, w in found if p == POSITIVE][: rules.examples_per_tool]
        negatives = [v for p, v, _ in found if p == NEGATIVE][: rules.examples_per_tool]
        positive = centroid([v for v, _ in kept], rules.examples_per_tool, rules.half_life)
        if positive is not None:
            negative = centroid(negatives, rules.examples_per_tool, rules.half_life)
            words = [w for _, w in kept if w is not None]
            rows.append((tool_id, scope, positive, negative, len(kept), len(negatives), words))
    return rows


async def remember(
    conn: asyncpg.Connection, examples: Sequence[Example], vectors: Mapping[str, Vector], rules: UsageRules
) -> UsageUpdated | None:
    """Add these examples (their queries embedded in ``vectors``) and recompute the vectors of the tools they
    touched, and of the tools their selections taught before (which may lose those queries' words: see
    ``toolsel.store.usage.EXAMPLES_OF``); what to broadcast after commit, or None when nothing changed (e.g. every
    example was known)."""
    examples = list({(e.tool_id, e.scope, e.selection_id, e.polarity): e for e in reversed(examples)}.values())
    if not examples:
        return None
    selections = sorted({(e.selection_id, e.scope) for e in examples if e.polarity == POSITIVE})
    taught_before = await usage.taught_by(conn, selections)
    await usage.lock_tools(conn, {e.tool_id for e in examples} | {tool_id for tool_id, _ in taught_before})
    queries = {q: i for i, q in enumerate(dict.fromkeys(e.query for e in examples))}
    new = [(e.tool_id, e.scope, e.event_id, e.polarity, queries[e.query], e.selection_id) for e in examples]
    touched = await usage.add_examples(conn, new, np.vstack([vectors[q] for q in queries]), list(queries))
    if not touched:
        return None
    touched = sorted(set(touched) | set(taught_before))
    await usage.trim_examples(conn, touched, rules.examples_per_tool)
    rows = usage_vectors(await usage.examples_of(conn, touched), rules)
    if not rows:
        return None
    return UsageUpdated(version=await usage.write_vectors(conn, rows), tools=len(rows))
