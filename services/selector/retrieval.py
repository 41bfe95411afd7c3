"""Retrieval signals over the catalog rows: BM25 (bm25s), reciprocal rank fusion, and the merge of a compound
request's rankings (its parts: ``decompose``)."""

import importlib.util
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
from stopwords import get_stopwords

from toolsel.services.selector.postings import Postings
from toolsel.services.selector.splice import Renumbering
from toolsel.services.selector.stages import Mask, Rows, Scores, locate

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SEPARATORS = re.compile(r"[_\-./]+")


def lexical_text(spec: Mapping[str, object]) -> str:
    """What BM25 matches a query against: name (camelCase and snake_case split), description, summaries,
    example queries, tags and parameter names and descriptions."""
    name = str(spec.get("name") or "")
    parts = [_SEPARATORS.sub(" ", _CAMEL.sub(r"\1 \2", name)), name]
    for key in ("display_name", "description", "function_summary", "when_to_use", "usage_hint"):
        parts.append(str(spec.get(key) or ""))
    for key in ("example_queries", "tags"):
        value = spec.get(key)
        if isinstance(value, list):
            parts.extend(str(v) for v in value)
    parameters = spec.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    if isinstance(properties, dict):
        for param, schema in properties.items():
            parts.append(_SEPARATORS.sub(" ", _CAMEL.sub(r"\1 \2", str(param))))
            if isinstance(schema, dict) and schema.get("description"):
                parts.append(str(schema["description"]))
    return "\n".join(p for p in parts if p)


_TOKEN = re.compile(r"(?u)\b\w\w+\b")
"""bm25s's own token pattern, applied without the per-call progress bar and set construction that cost a
selection about a millisecond per query."""


def _bm25s_stopwords() -> tuple[str, ...]:
    """bm25s's English stop words, read from their module alone: importing bm25s runs its package, which loads
    scipy's sparse matrices, 8 MB of a selector's memory for nothing the selector uses (``Postings`` scores as
    bm25s does, without it)."""
    package = importlib.util.find_spec("bm25s")  # found, not run
    if package is None or not package.submodule_search_locations:
        raise ImportError("bm25s is not installed")
    found = Path(package.submodule_search_locations[0]) / "stopwords.py"
    spec = importlib.util.spec_from_file_location("_bm25s_stopwords", found)
    if spec is None or spec.loader is None:
        raise ImportError(f"bm25s's stop words are not in {found}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    words: tuple[str, ...] = module.STOPWORDS_EN
    return words


STOPWORDS = frozenset(_bm25s_stopwords()) | frozenset(
    token for word in get_stopwords("english") for token in _TOKEN.findall(word.lower())
)
"""English stop words: bm25s's 33 and the `stopwords` package's 174 (pronouns, auxiliaries, contractions, cut
into tokens as queries are). Agents ask in sentences ("can you help me find..."), and those words matched
every description that speaks to its user: leaving them out lifted BM25's NDCG@10 on all four evaluation sets
(metatool 0.451 -> 0.497; docs/results.md, Quality)."""


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased word tokens without stop words, camelCase and snake_case split first."""
    return [
        [
            token
            for token in _TOKEN.findall(_SEPARATORS.sub(" ", _CAMEL.sub(r"\1 \2", text)).lower())
            if token not in STOPWORDS
        ]
        for text in texts
    ]


QUERIES_TOKENISED = 4096
"""Query texts whose tokens are kept (``query_tokens``)."""


@lru_cache(maxsize=QUERIES_TOKENISED)
def query_tokens(query: str) -> tuple[str, ...]:
    """``tokenize`` of one query, kept: a selection reads a query's words for its BM25 scores, its ceiling (twice),
    its learnt words and its reasons, and agents repeat queries."""
    return tuple(tokenize([query])[0])


class LexicalIndex:
    """BM25 over documents of tokens (every catalog row, or what a scope learnt); scores every document for a
    query. The score matrix is kept as sorted postings (``Postings``), so a catalog copy with a few rows changed is
    indexed again by tokenising only the new texts and splicing their postings in (``with_documents``)."""

    def __init__(self, documents: Iterable[Sequence[str]], *, k1: float, b: float) -> None:
        self._vocab: dict[str, int] = {}
        new = [self._ids(tokens, self._vocab) for tokens in documents]
        moved = Renumbering.of(np.full(len(new), -1, dtype=np.int64), 0)
        self._postings = Postings.empty(k1=k1, b=b).spliced(moved, new, len(self._vocab))

    @property
    def size(self) -> int:
        return self._postings.size

    @classmethod
    def of_texts(cls, texts: Iterable[str], *, k1: float, b: float) -> "LexicalIndex":
        """The index of these texts, tokenised one at a time."""
        return cls((tokenize([text])[0] for text in texts), k1=k1, b=b)

    def with_documents(self, moved: Renumbering, texts: Sequence[str]) -> "LexicalIndex":
        """A new index whose documents are this one's as ``moved`` renumbers them and ``texts`` at its new rows:
        only those are tokenised, the kept documents' postings are moved, not counted again. Words only removed
        documents had stay in the vocabulary and match nothing, so the scores are those of an index built
        afresh, until they are more than ``UNUSED_CODES_KEPT`` of it and it is numbered again without them."""
        vocab = self._vocab
        tokens = tokenize(texts)
        if any(token not in vocab for doc in tokens for token in doc):
            vocab = dict(vocab)  # this copy's own; the old one stays as it is for those who hold it
        new = [self._ids(doc, vocab) for doc in tokens]
        postings = self._postings.spliced(moved, new, len(vocab))
        if postings.pairs.unused(len(vocab)):  # words only removed documents held: numbered again without them
            pairs, renumbered = postings.pairs.without_unused(len(vocab))
            vocab = {word: int(renumbered[at]) for word, at in vocab.items() if renumbered[at] >= 0}
            postings = Postings.scored(postings.k1, postings.b, pairs, postings.tf, postings.lengths, len(vocab))
        fresh = LexicalIndex.__new__(LexicalIndex)
        fresh._vocab, fresh._postings = vocab, postings
        return fresh

    @staticmethod
    def _ids(tokens: Sequence[str], vocab: dict[str, int]) -> npt.NDArray[np.int32]:
        """A document's token ids, new words added to ``vocab``."""
        return np.array([vocab.setdefault(token, len(vocab)) for token in tokens], dtype=np.int32)

    def scores(self, query: str) -> Scores:
        vocab = self._vocab
        known = [vocab[t] for t in query_tokens(query) if t in vocab]
        return self._postings.scores(known).astype(np.float64)

    def holding(self, tokens: Sequence[str], documents: Mask | None = None) -> npt.NDArray[np.int64]:
        """How many of ``documents`` (every one: None) hold each token; 0 for a token none holds (a word the
        spelling stage may repair). A tenant's request counts only the tools it may see, so that another tenant's
        private words neither stay nor become its query's words."""
        postings, vocab = self._postings, self._vocab
        counts = np.zeros(len(tokens), dtype=np.int64)
        for i, token in enumerate(tokens):
            if (at := vocab.get(token)) is not None:
                start, end = postings.indptr[at], postings.indptr[at + 1]
                rows = postings.pairs.rows[start:end]
                counts[i] = rows.size if documents is None else int(np.count_nonzero(documents[rows]))
        return counts

    def words_of(self, documents: Mask | None) -> list[str]:
        """The words some of ``documents`` (every one: None) holds, in the index's order: a tenant's query is
        repaired towards these alone, and searched among these alone (another tenant's words cost it nothing)."""
        by_id, postings = list(self._vocab), self._postings
        if documents is None:
            return [by_id[i] for i in np.flatnonzero(postings.idf > 0)]
        tokens = len(postings.indptr) - 1
        word_of = np.repeat(np.arange(tokens), np.diff(postings.indptr))
        held = np.bincount(word_of, weights=documents[postings.pairs.rows], minlength=tokens) > 0
        return [by_id[i] for i in np.flatnonzero(held)]

    def ceiling(self, query: str) -> float:
        """The score a row matching every query token ever more often tends to (the sum of their IDFs): a
        row's score over it says how much of the query's words it matched, comparable across catalogs."""
        vocab, idf = self._vocab, self._postings.idf
        return float(sum(idf[vocab[t]] for t in query_tokens(query) if t in vocab))


def ranks(scores: Scores, mask: Mask) -> Scores:
    """1-based rank of each masked row by score (ties by row order); infinity outside the mask or at zero."""
    out = np.full(scores.shape, np.inf)
    rows = np.flatnonzero(mask & (scores > 0))
    order = rows[np.argsort(-scores[rows], kind="stable")]
    out[order] = np.arange(1, order.size + 1)
    return out


def ranks_of(scores: Scores, mask: Mask, rows: Rows) -> Scores:
    """``ranks(scores, mask)[rows]`` without ranking every row: a row's rank is one plus the ranked rows above it,
    so only the scores at least as high as the lowest asked for are sorted (ties: a tied row above it has a
    smaller index)."""
    ranked = mask & (scores > 0)
    out = np.full(rows.size, np.inf)
    mine = rows[ranked[rows]]
    if mine.size == 0:
        return out
    values = scores[mine]
    pooled = scores[ranked]
    higher = np.sort(pooled[pooled >= values.min()])
    above = higher.size - np.searchsorted(higher, values, side="right")
    tied = np.searchsorted(higher, values, side="right") - np.searchsorted(higher, values, side="left") > 1
    before = np.zeros(values.size)
    if tied.any():  # rare: only the distinct tied scores among the rows asked for
        for value in np.unique(values[tied]):
            same = values == value
            before[same] = np.searchsorted(np.flatnonzero(ranked & (scores == value)), mine[same])
    out[ranked[rows]] = above + before + 1
    return out


def placed(ranking: Rows, scores: Scores, rows: Rows) -> Scores:
    """Each of ``rows``' place in ``ranking``, the masked rows' top-n (``stages.top_n``: best first, ties by row, as
    ``ranks`` orders them): its rank, read off without ranking the pool; infinity where the ranking does not hold
    the row or the row scores 0 (unranked)."""
    order = np.argsort(ranking, kind="stable")
    at = locate(ranking[order], rows)
    held = at >= 0
    out = np.full(rows.size, np.inf)
    out[held] = np.where(scores[rows[held]] > 0, order[at[held]] + 1.0, np.inf)
    return out


def reciprocal_rank_fusion(rank_lists: Sequence[Scores], weights: Sequence[float], k: float) -> Scores:
    """Sum of w / (k + rank) over the lists, scaled so a row ranked first in every list scores 1."""
    total = sum(weights)
    if total <= 0:
        raise ValueError("fusion weights must sum to more than 0")
    fused = sum(w / (k + r) for w, r in zip(weights, rank_lists, strict=True))
    result: Scores = np.asarray(fused, dtype=np.float64) * (k + 1) / total
    return result


def score_fusion(signals: Sequence[Scores], weights: Sequence[float], mask: Mask) -> Scores:
    """Weighted mean of the signals, each scaled so its best masked row scores 1 (keeps the score gaps that
    ranks throw away)."""
    total = sum(weights)
    if total <= 0:
        raise ValueError("fusion weights must sum to more than 0")
    fused = np.zeros(mask.shape, dtype=np.float64)
    for signal, weight in zip(signals, weights, strict=True):
        top = signal[mask].max() if mask.any() else 0.0
        if weight and top > 0:
            fused += weight * signal / top
    result: Scores = fused / total
    return result


def bm25_confidence(scores: Scores, mask: Mask, scale: float) -> float:
    """Seed 003's gate: the best masked BM25 score over a scale, capped at 1 (tokens matched well)."""
    masked = scores[mask]
    return float(min(masked.max() / scale, 1.0)) if masked.size else 0.0


def round_robin(rankings: Sequence[Rows], limit: int) -> Rows:
    """Merge per-sub-query rankings, taking one from each in turn: every need gets its quota of the slots. The
    turns are one sort (depth, then ranking) and a row keeps its first turn."""
    if not rankings:
        return np.zeros(0, dtype=np.int64)
    turns = np.concatenate([np.arange(r.size) * len(rankings) + i for i, r in enumerate(rankings)])
    rows = np.concatenate(rankings).astype(np.int64)[np.argsort(turns, kind="stable")]
    _, first = np.unique(rows, return_index=True)
    merged: Rows = rows[np.sort(first)][:limit]
    return merged


def needs(rows: Rows, part_rankings: Sequence[Rows]) -> list[int | None]:
    """For each row, the part (index into ``part_rankings``) whose ranking holds it highest, the first part on a
    tie; None for a row that no part's ranking holds (only the whole query retrieved it). What a tool is then
    credited with is the need it was offered for, not the whole compound request."""
    if not part_rankings or rows.size == 0:
        return [None] * int(rows.size)
    absent = np.iinfo(np.int64).max
    depth = np.full((len(part_rankings), rows.size), absent, dtype=np.int64)
    for i, ranking in enumerate(part_rankings):
        order = np.argsort(ranking, kind="stable")
        at = locate(ranking[order], rows)
        depth[i, at >= 0] = order[at[at >= 0]]
    best, held = depth.argmin(axis=0), depth.min(axis=0) < absent
    return [int(b) if h else None for b, h in zip(best.tolist(), held.tolist(), strict=True)]
