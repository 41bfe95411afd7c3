"""Calibrated confidence: the probability that a tool is relevant, from its raw signals (not the max-scaled ones),
so an agent can tell a good fit from the best of a bad lot and "nothing fits" from "something does"."""

from collections.abc import Mapping, Sequence

import numpy as np

from services.selector.retrieval import ranks_of
from services.selector.stages import Mask, Rows, Scores

FEATURES = ("cosine", "bm25_match", "log_rank", "compound", "compound_log_rank")


def bm25_match(scores: Scores, ceiling: float) -> Scores:
    """Each row's BM25 score over the query's ceiling: the share of the query's words it matched, in [0, 1]
    (capped: a tool's learnt words are scored by their own index, whose scores the catalog's ceiling does not
    bound)."""
    if ceiling <= 0:
        return np.zeros_like(scores)
    result: Scores = np.minimum(scores / ceiling, 1.0)
    return result


def best_rank(relevances: Sequence[Scores], pool: Mask, rows: Rows) -> Scores:
    """Each of ``rows``' best retrieval rank within the pool over the whole query and its parts: a compound
    request has one first tool per need, so this tells how many tools fit it, which the rank of the
    best-over-parts relevance hides."""
    result: Scores = np.minimum.reduce([ranks_of(relevance, pool, rows) for relevance in relevances])
    return result


def confidence(
    cosine: Scores, match: Scores, rank: Scores, compound: bool, coefficients: Mapping[str, float]
) -> Scores:
    """The logistic model over raw cosine, BM25 match and log retrieval rank (``best_rank``: 1 = first for the
    query or one of its parts; infinity: not ranked, confidence 0). A compound request (split into parts) has its
    own intercept and rank slope: a part's first tool is a weaker sign than a whole query's, since a part is
    shorter and several of them each have a first tool."""
    missing = [name for name in ("intercept", *FEATURES) if name not in coefficients]
    if missing:
        raise ValueError(f"confidence coefficients lack {', '.join(missing)}")
    c = coefficients
    ranked = np.isfinite(rank)
    slope = c["log_rank"] + (c["compound_log_rank"] if compound else 0.0)
    z = c["intercept"] + (c["compound"] if compound else 0.0) + c["cosine"] * cosine + c["bm25_match"] * match
    z = z + slope * np.log(np.where(ranked, rank, 1.0))
    result: Scores = np.where(ranked, 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0))), 0.0)
    return result
