"""What the learner learnt from queries' vectors, derived again with another embedding model from the texts the
store keeps: the usage memory's examples (their words, else the part of their selection's query the tool was
offered for), the review log (its selection's query), and from them the usage vectors, the residuals, the scopes'
query totals and the review index. ``toolsel indexer --switch-model`` runs it, so a new model starts with what
the old one had learnt.

The examples and the log keep their rows and order (so recency and trimming stay as they were): only their
vectors change. The usage vectors are computed from the examples as online learning computes them; the review
index is the log folded in again review by review (``add_review``), as online; the residuals and the query totals
are the reviews replayed in the order they were applied, each review's lessons credited as online (the credits
are counted again from nothing, in that order) and stepped from the cosines its selection recorded. A review
replayed alone is its own batch: online, a batch's reviews share the scope's centre from before the batch. An
example or a logged verdict whose selection is no longer stored has no text and is dropped (``Relearnt.lost``).
Running it twice with one model gives the same state.
"""

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import asyncpg
import numpy as np
import numpy.typing as npt

from toolsel.services.learner.fitness import verdicts
from toolsel.services.learner.outcomes import teachable
from toolsel.services.learner.review_index import Entry, add_review
from toolsel.services.learner.reviews import Lesson, credited, lesson
from toolsel.services.learner.usage import (
    POLARITY,
    Key,
    Total,
    UsageRules,
    Vector,
    centres,
    distinct,
    ranked_totals,
    stepped,
    usage_vectors,
)
from toolsel.store import events, learning, reviews, usage

Embed = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
"""Unit vectors of texts with the new model, one row each."""
CHUNK = 1024
"""Texts embedded between two progress reports."""
Progress = Callable[[int, int], None]
"""Told (texts embedded, texts in all) after each chunk."""


@dataclass(frozen=True)
class Relearnt:
    """What was derived again with the new model."""

    examples: int
    """Usage examples embedded again."""
    verdicts: int
    """Logged review verdicts embedded again."""
    tools: int
    """(tool, scope) usage vectors computed again."""
    entries: int
    """Review-index entries."""
    lost: int
    """Examples and logged verdicts dropped: their selection is not stored, so their text is unknown."""


@dataclass(frozen=True)
class Plan:
    """Everything read and embedded before the one transaction that writes it."""

    examples: list[tuple[int, str | None]]
    log: list[asyncpg.Record]
    lessons: list[list[Lesson]]
    """Each stored review's lessons, in the order the reviews were applied."""
    vectors: dict[str, Vector]
    embed: Embed
    """The model the vectors come from: what a learner added while they were embedded is embedded with it."""


def replayed(
    lessons: Sequence[Sequence[Lesson]], vectors: Mapping[str, Vector], rules: UsageRules
) -> tuple[dict[Key, Vector], dict[str, Total]]:
    """The residuals and each scope's ranked-query total after these reviews' lessons, in order, each review a
    batch: credited as online from no credit used, then stepped (``usage.stepped``) from the residuals so far."""
    residuals: dict[Key, Vector] = {}
    totals: dict[str, Total] = {}
    listwise = rules.listwise
    if listwise is None:
        return residuals, totals
    used: dict[learning.CreditKey, int] = {}
    for review in lessons:
        examples, used = credited(review, used, rules.credits_per_actor)
        examples = distinct(examples)
        centre = None
        batch = ranked_totals(examples, vectors)
        if listwise.centred:
            centre = centres({scope: totals[scope] for scope in batch if scope in totals})
        for scope, (total, n) in batch.items():
            before, m = totals.get(scope, (np.zeros(total.shape, dtype=np.float32), 0))
            totals[scope] = (before + total, m + n)
        residuals |= stepped(examples, vectors, residuals, listwise, centre)
    return residuals, totals


def folded(
    log: Sequence[asyncpg.Record], vectors: Mapping[str, Vector], merge_similarity: float
) -> list[reviews.IndexRow]:
    """The review index the log's verdicts build when folded in one by one in log order (``add_review``)."""
    entries: dict[reviews.Owner, list[Entry]] = {}
    for r in log:
        owner = (r["tool_id"], r["scope"])
        entries[owner] = add_review(entries.get(owner, []), vectors[r["query"]], r["fitness"], merge_similarity)
    return [(tool_id, scope, e.centroid, e.fitness, e.reviews) for (tool_id, scope), es in entries.items() for e in es]


async def read(
    conn: asyncpg.Connection, rules: UsageRules
) -> tuple[list[tuple[int, str | None]], list[asyncpg.Record], list[list[Lesson]]]:
    """The examples' and the log's texts, and every stored review's lessons in the order applied."""
    examples = await usage.example_texts(conn)
    log = await reviews.log_texts(conn)
    history = await events.review_history(conn)
    tools = await learning.registered(conn, [k for row, _ in history for k in row["keys"]])
    lessons = []
    for row, given in history:
        judged = verdicts(teachable(row, tools), given, row["none_of_these"]).items()
        lessons.append([lesson(row["event_id"], row, k, v, tools[k].id, rules) for k, v in judged if v in POLARITY])
    return examples, log, lessons


def texts_of(
    examples: Sequence[tuple[int, str | None]], log: Sequence[asyncpg.Record], lessons: Sequence[Sequence[Lesson]]
) -> list[str]:
    """Every text the examples, the log and the lessons need a vector of, each once, sorted."""
    return sorted(
        {t for _, t in examples if t is not None}
        | {r["query"] for r in log if r["query"] is not None}
        | {lesson.example.query for review in lessons for lesson in review}
    )


async def plan(pool: asyncpg.Pool, rules: UsageRules, embed: Embed, chunk: int, progress: Progress) -> Plan:
    """Read what the store keeps and embed every text it needs with the new model, ``chunk`` texts at a time."""
    async with pool.acquire() as conn:
        examples, log, lessons = await read(conn, rules)
    texts = texts_of(examples, log, lessons)
    vectors: dict[str, Vector] = {}
    progress(0, len(texts))
    for start in range(0, len(texts), chunk):
        part = texts[start : start + chunk]
        vectors |= dict(zip(part, await embed(part), strict=True))
        progress(len(vectors), len(texts))
    return Plan(examples, log, lessons, vectors, embed)


async def caught_up(conn: asyncpg.Connection, planned: Plan, rules: UsageRules) -> Plan:
    """The plan as the store stands now, in the caller's transaction with the learnt texts locked: a learner that
    ran while the plan was embedded (a rebuild does not stop them) added examples, verdicts and reviews the plan
    lacks, which the write would drop from the index and the residuals, or keep with the old model's vectors.
    Their texts, usually few, are embedded here."""
    examples, log, lessons = await read(conn, rules)
    missing = [t for t in texts_of(examples, log, lessons) if t not in planned.vectors]
    vectors = planned.vectors | (dict(zip(missing, await planned.embed(missing), strict=True)) if missing else {})
    return Plan(examples, log, lessons, vectors, planned.embed)


async def write(conn: asyncpg.Connection, planned: Plan, rules: UsageRules, merge_similarity: float) -> Relearnt:
    """Store the planned vectors and everything computed from them, in the caller's transaction, with what was
    learnt since the plan was read (``caught_up``); learners wait until it commits."""
    await learning.lock_learnt_texts(conn)
    planned = await caught_up(conn, planned, rules)
    vectors = planned.vectors
    known = [(i, t) for i, t in planned.examples if t is not None]
    await usage.drop_examples(conn, [i for i, t in planned.examples if t is None])
    await usage.set_example_vectors(conn, [i for i, _ in known], [vectors[t] for _, t in known])
    log = [r for r in planned.log if r["query"] is not None]
    await reviews.drop_log(conn, [r["id"] for r in planned.log if r["query"] is None])
    await reviews.set_log_vectors(conn, [r["id"] for r in log], [vectors[r["query"]] for r in log])
    entries = folded(log, vectors, merge_similarity)
    await reviews.replace_index(conn, entries)
    residuals, totals = replayed(planned.lessons, vectors, rules)
    await usage.forget_vectors(conn)
    found = await usage.examples_of(conn, await usage.learnt(conn))
    rows = usage_vectors(found, rules, residuals)
    if rows:
        await usage.write_vectors(conn, rows)
    await usage.add_query_totals(conn, totals)
    lost = len(planned.examples) - len(known) + len(planned.log) - len(log)
    return Relearnt(len(known), len(log), len(rows), len(entries), lost)
