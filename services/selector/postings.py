"""BM25's sparse score matrix kept as sorted postings, so that a catalog copy with a few documents changed is
scored again by array operations proportional to the matrix (a splice and one vectorised pass), not by indexing
every document again in Python.

The matrix is the one bm25s builds (its default, Lucene's BM25): one posting per (token, document) pair, ordered
by token and then document (bm25s's CSC layout), holding the term frequency and the precomputed score
``idf(token) * tf / (tf + k1 * (1 - b + b * length / mean length))`` in float32. Scores are bit for bit those of
``bm25s.BM25(k1=k1, b=b).index(...)`` over the same documents (a unit test compares them over random edits):
the same formula, the same operations in the same order, the same float32 rounding."""

import math
from dataclasses import dataclass
from typing import Self

import numpy as np
import numpy.typing as npt

from toolsel.services.selector.splice import Pairs, Renumbering

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Postings:
    """A BM25 score matrix over ``size`` documents and ``vocabulary`` tokens; every array is read-only once made,
    so copies share what they do not change."""

    k1: float
    b: float
    pairs: Pairs
    """(token, document) of each posting, sorted."""
    tf: npt.NDArray[np.float32]
    """How often the token occurs in the document."""
    data: npt.NDArray[np.float32]
    """The posting's BM25 score."""
    indptr: Ints
    """A token's postings are ``indptr[token]:indptr[token + 1]``."""
    lengths: Ints
    """Each document's length in tokens."""
    idf: npt.NDArray[np.float64]
    """The inverse document frequency ``BM25.ceiling`` sums (``log1p``, zero for a token in no document)."""

    @property
    def size(self) -> int:
        return int(self.lengths.size)

    @classmethod
    def empty(cls, *, k1: float, b: float) -> Self:
        nothing = np.zeros(0, dtype=np.int32)
        return cls.scored(k1, b, Pairs(nothing, nothing), np.zeros(0, np.float32), np.zeros(0, np.int64), 0)

    def scores(self, token_ids: list[int]) -> npt.NDArray[np.float32]:
        """Each document's score for a query of these tokens (repeats count again), summed in float32 in the
        query's order as bm25s sums them."""
        scores = np.zeros(self.size, dtype=np.float32)
        docs = self.pairs.rows
        for token in token_ids:
            start, end = self.indptr[token], self.indptr[token + 1]
            scores[docs[start:end]] += self.data[start:end]  # a document once per token: no np.add.at needed
        return scores

    def spliced(self, moved: Renumbering, new: list[npt.NDArray[np.int32]], vocabulary: int) -> "Postings":
        """The matrix of the new copy (``moved``), ``new`` the token ids of its new documents in order;
        ``vocabulary`` is at least this one's. The kept documents' postings are moved, not counted again."""
        lengths = moved.column(self.lengths, [doc.size for doc in new])
        tokens = np.concatenate([np.zeros(0, dtype=np.int64), *new])
        added, counts = Pairs.of(tokens, np.repeat(moved.added, lengths[moved.added]), moved.size)
        pairs, stay, at = self.pairs.spliced(moved, added)
        tf = np.insert(self.tf[stay], at, counts.astype(np.float32))
        return Postings.scored(self.k1, self.b, pairs, tf, lengths, vocabulary)

    @classmethod
    def scored(
        cls, k1: float, b: float, pairs: Pairs, tf: npt.NDArray[np.float32], lengths: Ints, vocabulary: int
    ) -> Self:
        """The matrix of these postings, each scored in one pass over them, as bm25s scores each document's."""
        tokens, docs, size = pairs.keys, pairs.rows, lengths.size
        indptr = pairs.starts(vocabulary)
        frequency = np.diff(indptr)
        data = np.zeros(0, dtype=np.float32)
        if tokens.size:
            mean_length = lengths.mean()  # bm25s's own: an exact integer sum over the count, in float64
            norm = k1 * ((1 - b) + b * lengths.astype(np.float64) / mean_length)  # per document, then per posting
            data = (_lucene_idf(frequency, size)[tokens] * (tf / (norm[docs] + tf))).astype(np.float32)
        idf = np.where(frequency > 0, np.log1p((size - frequency + 0.5) / (frequency + 0.5)), 0.0)
        for array in (tokens, docs, tf, data, indptr, lengths, idf):
            array.flags.writeable = False
        return cls(k1, b, pairs, tf, data, indptr, lengths, idf)


def _lucene_idf(frequency: Ints, size: int) -> npt.NDArray[np.float32]:
    """bm25s's idf per token in float32: ``math.log(1 + (N - df + 0.5) / (df + 0.5))`` in Python's double, once
    per distinct document frequency (a few hundred), where numpy's own log could differ in the last bit."""
    counts = np.unique(frequency)
    per_count = np.zeros(int(counts[-1]) + 1, dtype=np.float32)
    per_count[counts] = [math.log(1 + (size - df + 0.5) / (df + 0.5)) if df else 0.0 for df in counts.tolist()]
    result: npt.NDArray[np.float32] = per_count[frequency]
    return result
