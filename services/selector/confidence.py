"""Calibrated confidence: the probability that a tool is relevant, from its raw signals (not the max-scaled ones),
so an agent can tell a good fit from the best of a bad lot and "nothing fits" from "something does"."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from toolsel.services.selector.retrieval import placed, ranks_of
from toolsel.services.selector.stages import Mask, Rows, Scores

TERMS = (
    "intercept",
    "cosine",
    "bm25_match",
    "log_rank",
    "cosine_lead",
    "log_length",
    "compound",
    "compound_log_rank",
    "compound_first",
)
"""The logistic model's terms, each with its coefficient: the raw cosine, the BM25 match, the log of the best
retrieval rank, the cosine's lead over the best other tool's times the cosine (a tool that stands out, and is near
the query), the log of the query's length in characters (a longer request's mean-pooled vector is further from any
one tool, so the same cosine is a better fit); and for a compound request (split into parts) an intercept, a rank
slope and a term for a part's first tool of its own."""


@dataclass(frozen=True)
class Signals:
    """The raw signals of the rows a request scored, aligned with them."""

    cosine: Scores
    match: Scores
    """``bm25_match``: the share of the query's BM25 ceiling each row reached."""
    rank: Scores
    """``best_rank``: 1 = first for the query or one of its parts; infinity: not ranked."""
    lead: Scores
    """``lead`` of the cosine: how far each row's cosine stands from the best other row's."""
    length: int
    """The request's query length in characters (one value for every row)."""


def bm25_match(scores: Scores, ceiling: float) -> Scores:
    """Each row's BM25 score over the query's ceiling: the share of the query's words it matched, in [0, 1]
    (capped: a tool's learnt words are scored by their own index, whose scores the catalog's ceiling does not
    bound)."""
    if ceiling <= 0:
        return np.zeros_like(scores)
    result: Scores = np.minimum(scores / ceiling, 1.0)
    return result


def best_rank(relevances: Sequence[Scores], rankings: Sequence[Rows], pool: Mask, rows: Rows) -> Scores:
    """Each of ``rows``' best retrieval rank within the pool over the whole query and its parts (``rankings``:
    each one's top-n, as ``stages.top_n`` gives it, all of one depth n): a compound request has one first tool per
    need, so this tells how many tools fit it, which the rank of the best-over-parts relevance hides. A row a
    ranking holds is ranked best there (one that does not hold it ranks it past n), so only the rows none holds (a
    pin, a related tool past the candidates) are ranked against the pool."""
    found: Scores = np.minimum.reduce(
        [placed(r, relevance, rows) for relevance, r in zip(relevances, rankings, strict=True)]
    )
    rest = np.isinf(found)
    if rest.any():
        found[rest] = np.minimum.reduce([ranks_of(relevance, pool, rows[rest]) for relevance in relevances])
    return found


def lead(scores: Scores, pool: Mask, rows: Rows) -> Scores:
    """Each of ``rows``' score less the best other score in the pool (``scores`` and ``pool`` over every catalog
    row): for the first, how far it stands ahead of the runner-up (a tool far nearer the query than any other is
    likelier the one), for the others how far they trail it (negative); rows tied at the top lead by 0."""
    inside = scores[pool]
    own = scores[rows]
    if inside.size == 0:
        return np.zeros_like(own)
    second, top = np.partition(inside, -2)[-2:] if inside.size > 1 else (0.0, inside[0])
    result: Scores = np.where(own >= top, own - second, own - top)
    return result


def terms(signals: Signals, compound: bool) -> npt.NDArray[np.float64]:
    """One row per scored row, one column per ``TERMS`` entry (an unranked row's rank counts as 1: its
    confidence is 0 whatever the model says). The lead counts times the cosine: among tools that all miss the
    query (a question no tool answers, in a small catalog), the one ahead is no likelier right."""
    rank = np.where(np.isfinite(signals.rank), signals.rank, 1.0)
    log_rank, first, ones = np.log(rank), (rank == 1.0).astype(np.float64), np.ones_like(rank)
    split = 1.0 if compound else 0.0
    log_length = np.full_like(rank, np.log(max(signals.length, 1)))
    columns = [ones, signals.cosine, signals.match, log_rank, signals.lead * signals.cosine, log_length]
    return np.column_stack([*columns, split * ones, split * log_rank, split * first])


def confidence(signals: Signals, compound: bool, coefficients: Mapping[str, float]) -> Scores:
    """The logistic model over ``terms``: a compound request has terms of its own, since a part's first tool is a
    weaker or stronger sign than a whole query's as its parts ask for one tool or several. An unranked row's
    confidence is 0."""
    missing = [name for name in TERMS if name not in coefficients]
    if missing:
        raise ValueError(f"confidence coefficients lack {', '.join(missing)}")
    z = terms(signals, compound) @ np.array([coefficients[name] for name in TERMS], dtype=np.float64)
    result: Scores = np.where(np.isfinite(signals.rank), 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0))), 0.0)
    return result
