"""The selection stages as pure functions over arrays: each one testable alone, none doing I/O.

A mask is a boolean array over catalog rows; scores are float arrays aligned with it.
"""

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce

import numpy as np
import numpy.typing as npt

from toolsel.contracts import SHARED_TENANT
from toolsel.pages import page_matches, with_descendants

Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]
Rows = npt.NDArray[np.int64]
Vector = npt.NDArray[np.float32]
"""A unit embedding: a query's, or one row of a matrix of them."""


def tenant_mask(tenants: npt.NDArray[np.str_], tenant_id: str) -> Mask:
    """Tools of this tenant plus those shared with all; never another tenant's."""
    result: Mask = (tenants == tenant_id) | (tenants == SHARED_TENANT)
    return result


def page_categories(
    mappings: Iterable[tuple[str, str, str, int]], page: str, parents: dict[tuple[str, str], str | None]
) -> set[tuple[str, str]]:
    """(plugin, category) pairs mapped to this page, with every sub-category of each (categories nest)."""
    if not page:
        return set()
    wanted = {(plugin, category) for plugin, pattern, category, _ in mappings if page_matches(pattern, page)}
    return with_descendants(wanted, parents)


def rows_mask(rows_of: Mapping[str, Rows], size: int, wanted: Iterable[str]) -> Mask:
    """The rows carrying any ``wanted`` label (a lookup such as ``splice.Groups``) among ``size`` rows."""
    mask = np.zeros(size, dtype=bool)
    for label in wanted:
        if (rows := rows_of.get(label)) is not None:
            mask[rows] = True
    return mask


def narrow(mask: Mask, keep: Mask) -> tuple[Mask, bool]:
    """Apply a filter unless it would leave nothing; says whether it was applied (graceful fallback)."""
    narrowed: Mask = mask & keep
    if narrowed.any():
        return narrowed, True
    return mask, False


def cosine(vectors: npt.NDArray[np.float32], query: Vector) -> Scores:
    """Cosine similarity of unit vectors: a dot product."""
    result: Scores = (vectors @ query).astype(np.float64)
    return result


COSINE_BLOCK_ROWS = 4096
"""Catalog rows per matrix-vector product in ``cosines``: with the catalog's vectors stored a dimension at a time
(``Catalog.vectors``, Fortran order), OpenBLAS reads a block once per query at memory speed and a block of 4,096
rows (6 MB) is still in the cache for the request's next query; at 10,000 rows the products took 0.67 / 0.97 /
1.39 / 2.12 / 2.32 ms for 1 / 2 / 3 / 5 / 8 queries against 1.78 / 1.57 / 1.58 / 2.24 / 3.32 ms for row-major
blocks of 512 rows multiplied by all queries at once (docs/results.md)."""


def cosines(vectors: npt.NDArray[np.float32], queries: Sequence[Vector]) -> list[Scores]:
    """``cosine`` of each query, a block of rows at a time, each query's matrix-vector product over the block while
    it is in the cache (at 10,000 tools reading the rows is most of a query's cost, memory-bound). Fastest on
    vectors stored a dimension at a time, as a catalog holds them."""
    product = np.empty((len(queries), vectors.shape[0]), dtype=np.result_type(vectors, *queries))
    for start in range(0, vectors.shape[0], COSINE_BLOCK_ROWS):
        block = vectors[start : start + COSINE_BLOCK_ROWS]
        for i, query in enumerate(queries):
            np.matmul(block, query, out=product[i, start : start + COSINE_BLOCK_ROWS])
    return list(product.astype(np.float64))


def top_n(scores: Scores, mask: Mask, n: int) -> Rows:
    """Rows of the ``n`` best scores among the masked rows, best first (stable for ties)."""
    rows = np.flatnonzero(mask)
    values = -scores[rows]
    if 0 < n < rows.size:  # partition first: only the n best (and rows tied with the n-th) get sorted
        keep = np.flatnonzero(values <= np.partition(values, n - 1)[n - 1])
        rows, values = rows[keep], values[keep]
    result: Rows = rows[np.argsort(values, kind="stable")[:n]].astype(np.int64)
    return result


def locate(rows: Rows, wanted: Rows) -> Rows:
    """Where each of ``wanted`` sits in ``rows`` (ascending), -1 where it is not there: catalog rows to the
    positions of a selection's row subset."""
    at = np.searchsorted(rows, wanted).astype(np.int64)
    found = at < rows.size
    found[found] = rows[at[found]] == wanted[found]
    result: Rows = np.where(found, at, -1)
    return result


def member(values: Rows, of: Rows) -> Mask:
    """Whether each of ``values`` is among ``of``: ``np.isin`` for the few rows a selection holds, by a sort and a
    binary search (7 microseconds for 90 rows among 30, where ``np.isin``'s general machinery took 52, five times a
    selection)."""
    found: Mask = locate(np.sort(of), values) >= 0
    return found


def epoch_seconds(moments: Sequence[datetime | None]) -> Scores:
    """Seconds since the epoch, NaN for never: done once per catalog copy so requests stay vectorised."""
    return np.array([m.timestamp() if m is not None else np.nan for m in moments], dtype=np.float64)


def recency(last_success_s: Scores, now_s: float, half_life_days: float) -> Scores:
    """Exponential decay since the last successful call; 0 for a tool that never succeeded."""
    days = np.maximum(now_s - last_success_s, 0.0) / 86400.0
    decayed: Scores = np.where(np.isnan(last_success_s), 0.0, 0.5 ** (days / half_life_days))
    return decayed


def posterior_mean(alpha: Scores, beta: Scores) -> Scores:
    mean: Scores = alpha / (alpha + beta)
    return mean


def thompson(alpha: Scores, beta: Scores, rng: np.random.Generator | None) -> Scores:
    """One draw from each Beta(alpha, beta); the posterior mean when randomness is off (rng None)."""
    if rng is None:
        return posterior_mean(alpha, beta)
    sample: Scores = rng.random(alpha.shape)  # Beta(1, 1) is uniform: most rows, a twentieth of the cost
    learnt = (alpha != 1.0) | (beta != 1.0)
    sample[learnt] = rng.beta(alpha[learnt], beta[learnt])
    return sample


def composite(
    signals: Mapping[str, Scores],
    weights: Mapping[str, float],
    neutral: Mapping[str, float],
    bound: str | None = None,
) -> Scores:
    """Seed 004's weighted score with seed 001's and 002's factors: the sum, in the signals' order, of each
    signal's weight times its distance from its neutral value; a signal without a weight adds nothing.

    With ``bound`` naming a signal (the relevance), every other signal's part is multiplied by its scores: what
    was learnt (quality, recency, fitness) lifts a tool at most in proportion to how relevant it is, so
    popularity alone never carries an unrelated tool above relevant ones."""
    scale = signals[bound] if bound is not None else None
    parts = []
    for name, scores in signals.items():
        part = weights.get(name, 0.0) * (scores - neutral.get(name, 0.0))
        parts.append(part if scale is None or name == bound else part * scale)
    total: Scores = reduce(operator.add, parts)
    return total


def rescored(score: Scores, relevance: Scores, own: Scores) -> Scores:
    """The composite as if ``own`` were the relevance: ``composite`` bounds every learnt part by the relevance, so
    the score is the relevance times a learnt factor, and scales with it. A compound request's part ranks its own
    candidates so, not by the best relevance over the parts (a tool another part wants would jump this part's
    queue)."""
    nonzero = relevance != 0
    result: Scores = np.where(nonzero, score * own / np.where(nonzero, relevance, 1.0), 0.0)
    return result


def choose(
    candidates: Rows,
    exploit: Scores,
    explore: Scores,
    k: int,
    exploration_slots: int,
    beyond: Rows | None = None,
) -> tuple[Rows, Rows]:
    """K minus the exploration slots by the expected score, then for each slot the best of the rest by the
    sampled score: a new or uncertain tool gets tried without pushing a proven one out. With ``beyond`` the
    slots draw from those rows instead of the candidates left (exploration past the candidate list).

    Returns (chosen rows in order, the rows that were exploration picks).
    """
    explore_n = max(0, min(exploration_slots, k - 1))
    ranked = candidates[np.argsort(-exploit[candidates], kind="stable")]
    exploited = ranked[: k - explore_n]
    rest = ranked[k - explore_n :] if beyond is None else beyond
    picks = rest[np.argsort(-explore[rest], kind="stable")[:explore_n]]
    return np.concatenate([exploited, picks]).astype(np.int64), picks.astype(np.int64)


def evidence(alpha: Scores, beta: Scores, prior_alpha: float, prior_beta: float) -> Scores:
    """Observations behind each posterior beyond its prior (discounted counts, so fractional)."""
    result: Scores = np.maximum(alpha + beta - prior_alpha - prior_beta, 0.0)
    return result


DEEP_HALF_OBSERVATIONS = 10.0
"""Observations of a context's top tools at which the exploration slot reaches past the candidates half the time:
a context nothing was observed in looks past them always, one whose top tools are well known seldom, as the
candidates it has then tried are likelier the right ones."""
DEEP_RELEVANCE_WEIGHT = 0.5
"""What a row's relevance (scaled to the best) adds to its Thompson draw past the candidates: among the untried,
the more relevant is tried first, while the draw still spreads the tries over them."""


def deep_exploration_chance(observations: float) -> float:
    """The chance that the exploration slot reaches past the candidates: 1 in a context never observed,
    falling as its top tools gather observations (1/2 at ``DEEP_HALF_OBSERVATIONS``, 1/11 at ten times it)."""
    return 1.0 / (1.0 + observations / DEEP_HALF_OBSERVATIONS)


def beyond_candidates(relevance: Scores, mask: Mask, candidates: Rows, depth: int) -> Rows:
    """The masked rows within ``depth`` of the relevance ranking that are not candidates, best first."""
    ranked = top_n(relevance, mask, depth)
    result: Rows = ranked[~member(ranked, candidates)]
    return result


def deep_score(draw: Scores, relevance: Scores, top: float | None = None) -> Scores:
    """How a slot past the candidates picks: the Thompson draw plus ``DEEP_RELEVANCE_WEIGHT`` of the relevance
    (scaled to its best, or to ``top`` when the rows given are a subset), so an untried tool gets its chance among
    those a little less relevant than the candidates."""
    if top is None:
        top = float(relevance.max()) if relevance.size else 0.0
    result: Scores = draw + DEEP_RELEVANCE_WEIGHT * (relevance / top if top > 0 else relevance)
    return result


def inject_pins(chosen: Rows, pinned_rows: Rows, pin_weight: npt.NDArray[np.int64], most: int) -> Rows:
    """Always-pinned tools first by pin weight, then the chosen; pins may take the count past K, but at most
    ``most`` of them are shown (the heaviest), so that a catalog pinning hundreds of tools still answers."""
    pins = pinned_rows[np.argsort(-pin_weight[pinned_rows], kind="stable")][: max(most, 0)]
    rest = chosen[~member(chosen, pins)]
    return np.concatenate([pins, rest]).astype(np.int64)


@dataclass(frozen=True)
class NearReviews:
    """The review-index entries nearest a query: their catalog rows, similarities and fitness."""

    rows: Rows
    similarity: Scores
    fitness: Scores

    def within(self, rows: Rows) -> "NearReviews":
        """The entries whose tool is one of ``rows`` (ascending), renumbered by its position there: a selection
        scores only its row subset."""
        at = locate(rows, self.rows)
        kept = at >= 0
        return NearReviews(at[kept], self.similarity[kept], self.fitness[kept])


def nearest_reviews(
    centroids: npt.NDArray[np.float32],
    entry_rows: Rows,
    entry_fitness: Scores,
    query: Vector,
    neighbours: int,
    min_similarity: float,
) -> NearReviews:
    """Seed 002's lookup of past queries like this one: the ``neighbours`` nearest centroids at least
    ``min_similarity`` close whose tool is in this catalog copy (``entry_rows`` is -1 where it is not, or where
    the entry is another scope's). Only those entries compete for the places: nearer entries that are not this
    request's to read never crowd out the ones that are."""
    similarity = (centroids @ query).astype(np.float64) if centroids.shape[0] else np.zeros(0, dtype=np.float64)
    eligible = np.flatnonzero((entry_rows >= 0) & (similarity >= min_similarity))
    near = eligible[np.argsort(-similarity[eligible], kind="stable")[:neighbours]]
    return NearReviews(entry_rows[near], similarity[near], entry_fitness[near])


def historical_fitness(near: NearReviews, rows: int, sharpness: float = 0.0) -> Scores:
    """Each tool's fitness for the near past queries, weighted by their similarity ``s`` times ``exp(sharpness x
    (s - 1))`` (the nearest verdicts on a tool decide, not the mean of every verdict within reach); 1.0 (neutral)
    without."""
    out = np.ones(rows, dtype=np.float64)
    weights = np.zeros(rows, dtype=np.float64)
    sums = np.zeros(rows, dtype=np.float64)
    kernel = near.similarity * np.exp(sharpness * (near.similarity - 1.0))
    np.add.at(weights, near.rows, kernel)
    np.add.at(sums, near.rows, kernel * near.fitness)
    seen = weights > 0
    out[seen] = sums[seen] / weights[seen]
    return out


def historical_recommendation(near: NearReviews, rows: int) -> Scores:
    """The historical ranking: for each tool, the best ``similarity x (fitness - 1)`` over the near past
    queries where it helped (fitness above neutral); 0 for a tool no near past query vouches for."""
    out = np.zeros(rows, dtype=np.float64)
    helped = near.fitness > 1.0
    np.maximum.at(out, near.rows[helped], near.similarity[helped] * (near.fitness[helped] - 1.0))
    return out
