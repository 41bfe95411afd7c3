"""Misspelt query words repaired against the catalog's own words, before anything reads the query.

A word BM25 does not know matches nothing, and the model reads a misspelling as pieces of other words ("wether
forcast for tomorow" is nearer a surf report than the weather tool), so a misspelt request gets a wrong answer
said to be `no_match`. The catalog's vocabulary is the dictionary: a query word that no tool's text holds and no
English dictionary lists (pyspellchecker's word list: "trending", "tastings" and "Paris" are words, "forcast" is
not) becomes the catalog word fewest edits away (transpositions count one), as many edits allowed as
Elasticsearch's AUTO fuzziness gives for its length, the most common such word where several are as near. A word
some tool holds is never changed, nor a name (a capital past the query's first letter: "Binance"), a part of an
address or identifier, or a word too short to tell a typo from another word.

A tenant's query is read against the words of the tools it may see, not the whole catalog's: the repaired query
comes back in the reply (its parts), so repairing towards another tenant's private tool would spell that tool's
words out to it.
"""

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import TypeVar
from weakref import WeakKeyDictionary

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import OSA
from spellchecker import SpellChecker

from toolsel.contracts import SelectRequest
from toolsel.services.selector.catalog import Catalog
from toolsel.services.selector.retrieval import LexicalIndex, tokenize
from toolsel.services.selector.retrieval_cache import pool_digest
from toolsel.services.selector.stages import Mask
from toolsel.settings import Settings

V = TypeVar("V")

_WORD = re.compile(r"(?<![^\s(\[])[^\W\d_]+(?=[.,;:!?)\]]*(?:\s|$))")
"""A word of letters standing alone (between spaces, brackets or a sentence's punctuation): not a part of an
address, an identifier or a quoted value ("mycompany.com", "react-chartjs-2", "'banjir'"), which are data."""


class WordList:
    """A set of words held compactly: each length's words (in UTF-8 bytes) one sorted numpy array, looked up by a
    binary search. Lower-cased as pyspellchecker's checker compares them, so ``word in WordList(checker's words)``
    is ``word in checker``; its 160,572 English words take 4 MB of a selector's memory this way against the
    checker's 24 MB (its dict of word counts, which the stage never reads)."""

    def __init__(self, words: Iterable[str]) -> None:
        by_length: dict[int, list[bytes]] = {}
        for word in sorted({word.lower().encode() for word in words}):
            by_length.setdefault(len(word), []).append(word)
        self._by_length: dict[int, npt.NDArray[np.bytes_]] = {
            size: np.array(kept, dtype=f"S{size}") for size, kept in by_length.items()
        }

    def __contains__(self, word: str) -> bool:
        key = word.lower().encode()
        kept = self._by_length.get(len(key))
        if kept is None:
            return False
        at = int(np.searchsorted(kept, key))
        return at < kept.size and bytes(kept[at]) == key


@cache
def english() -> WordList:
    """English words (loaded once a process, as a selector starts): a word it lists is no misspelling, whether or
    not a tool's text holds it. The checker is read for its words and let go."""
    return WordList(SpellChecker(distance=1).word_frequency.keys())


def edits_allowed(word: str, one_edit: int, two_edits: int) -> int:
    """AUTO fuzziness: no edit under ``one_edit`` letters, one up to ``two_edits``, two from there."""
    return 0 if len(word) < one_edit else 1 if len(word) < two_edits else 2


def by_length(words: Iterable[str]) -> dict[int, list[str]]:
    """Words by their length: a word is searched for among those it could be ``edits`` away from alone."""
    grouped: dict[int, list[str]] = {}
    for word in words:
        grouped.setdefault(len(word), []).append(word)
    return grouped


def nearest_word(
    word: str, index: LexicalIndex, edits: int, documents: Mask | None = None, words: dict[int, list[str]] | None = None
) -> str | None:
    """The word of ``documents`` (every one: None) at most ``edits`` away from ``word`` (fewest edits, then the
    most documents holding it, then the first in alphabetical order, so that a copy spliced from changes repairs as
    one read whole); None when there is none. ``words``: those documents' words by length (``by_length``), made
    here when not given."""
    grouped = by_length(index.words_of(documents)) if words is None else words
    nearby = [w for size in range(len(word) - edits, len(word) + edits + 1) for w in grouped.get(size, ())]
    if not nearby:
        return None
    # cdist, not extract: it lets go of the GIL while it compares, so a search in a worker thread (``repair``'s,
    # among a tenant's hundreds of thousands of words) leaves the event loop free
    distances = process.cdist([word], nearby, scorer=OSA.distance, score_cutoff=edits, workers=1, dtype=np.int32)[0]
    found = [(nearby[at], int(distances[at])) for at in np.flatnonzero(distances <= edits)]
    holding = index.holding([hit for hit, _ in found], documents)
    near = [(distance, -int(held), hit) for (hit, distance), held in zip(found, holding, strict=True) if held]
    return min(near)[2] if near else None


REPAIRS_KEPT = 256
"""Repaired queries kept per catalog copy. A selector repairs a request's query twice: ahead of the selection, to
embed the text the selection will read, and in it; past the first, a repair costs a lookup."""
WORDS_KEPT = 4096
"""Query words kept per catalog copy with what the stage made of them (the word as it was, or the catalog word it
became). Most of a new query's words were in an earlier one, and deciding a word costs its tokens, its IDF and the
English list (about 11 microseconds; a query of 32 words took 0.35 ms), against a lookup once kept."""


@dataclass
class _Kept:
    """What the stage decided for one catalog copy under one pair of edit settings, for one set of visible
    tools, and those tools' words by length (made at the first word to search for)."""

    queries: dict[str, str] = field(default_factory=dict)
    words: dict[str, "Decided"] = field(default_factory=dict)
    vocabulary: dict[int, list[str]] | None = None


@dataclass(frozen=True)
class Decided:
    """What the stage made of one query word."""

    word: str
    """The word as the stage leaves it (repaired or as it was)."""
    searched: bool
    """Whether deciding it took a search of the catalog's words: such a word counts against a query's bound
    (``TOOLSEL_SPELLING_MAX_WORDS``) whether it is searched now or was by an earlier query, so that how much of a
    query is repaired depends on the query alone, not on what a selector was asked before."""


_kept: "WeakKeyDictionary[LexicalIndex, dict[tuple[int, int, bytes], _Kept]]" = WeakKeyDictionary()
_kept_lock = threading.Lock()


class _WouldSearch(Exception):
    """A word of the query takes a search of the catalog's words, which the caller makes elsewhere."""


def repair(query: str, index: LexicalIndex, settings: Settings, documents: Mask | None = None) -> str:
    """The query with each misspelt word (neither a tool's text nor English holds it, and not a name) replaced by
    its nearest catalog word, where one is near enough; the query as it was with ``TOOLSEL_QUERY_SPELLING`` off.
    Only ``documents`` count as the catalog (a tenant's visible tools; None: every one). Kept for ``index`` (a
    catalog copy's words) and those documents: the last ``REPAIRS_KEPT`` queries, ``WORDS_KEPT`` words."""
    found = _repair(query, index, settings, documents, search=True)
    assert found is not None
    return found


def repair_at_once(query: str, index: LexicalIndex, settings: Settings, documents: Mask | None = None) -> str | None:
    """``repair``, where it takes no search of the catalog's words (the query's words all decided before, or held by
    a tool or English); None where one would: a search costs milliseconds, and up to a second among a tenant's
    hundreds of thousands of words of its own, which the selector makes in a worker thread, off the event loop."""
    return _repair(query, index, settings, documents, search=False)


def _repair(query: str, index: LexicalIndex, settings: Settings, documents: Mask | None, search: bool) -> str | None:
    if not settings.query_spelling:
        return query
    edits = (settings.spelling_one_edit_length, settings.spelling_two_edits_length)
    key = (*edits, b"" if documents is None else pool_digest(documents))
    with _kept_lock:
        kept = _kept.setdefault(index, {}).setdefault(key, _Kept())
        found = kept.queries.get(query)
    if found is None:
        lookups = [settings.spelling_max_words]
        try:
            found = _WORD.sub(lambda match: _word(match, index, kept, edits, documents, lookups, search), query)
        except _WouldSearch:
            return None
        _keep(kept.queries, query, found, REPAIRS_KEPT)
    return found


def repaired(catalog: Catalog, request: SelectRequest, settings: Settings) -> str:
    """The request's query as a selection reads it: repaired against the tools its tenant may see."""
    return repair(request.query, catalog.lexical, settings, catalog.standing(request.tenant_id).visible)


def repaired_at_once(catalog: Catalog, request: SelectRequest, settings: Settings) -> str | None:
    """``repaired`` where it takes no search of the catalog's words (``repair_at_once``)."""
    return repair_at_once(request.query, catalog.lexical, settings, catalog.standing(request.tenant_id).visible)


def _word(
    match: re.Match[str],
    index: LexicalIndex,
    kept: _Kept,
    edits: tuple[int, int],
    documents: Mask | None,
    lookups: list[int],
    search: bool,
) -> str:
    """A query word as the stage leaves it: a name as it is, any other as decided once per catalog copy; of the
    words that take a search, those past the query's first ``TOOLSEL_SPELLING_MAX_WORDS`` as they are. Without
    ``search``, a word that takes one raises ``_WouldSearch``."""
    word = match.group(0)
    if match.start() > 0 and not word.islower():  # a name
        return word
    with _kept_lock:
        decided = kept.words.get(word)
    if decided is None:
        may_search = lookups[0] > 0
        if not search:
            decided = fixed(word, index, *edits, documents, may_search=False)
            if decided is None and may_search:
                raise _WouldSearch
        else:
            if may_search and kept.vocabulary is None:
                kept.vocabulary = by_length(index.words_of(documents))
            decided = fixed(word, index, *edits, documents, kept.vocabulary, may_search=may_search)
        if decided is None:
            return word
        _keep(kept.words, word, decided, WORDS_KEPT)
    if not decided.searched:
        return decided.word
    if lookups[0] <= 0:
        return word
    lookups[0] -= 1
    return decided.word


def fixed(
    word: str,
    index: LexicalIndex,
    one_edit: int,
    two_edits: int,
    documents: Mask | None = None,
    words: dict[int, list[str]] | None = None,
    may_search: bool = True,
) -> Decided | None:
    """A word that is not a name, decided: the nearest word of ``documents`` when neither one of them nor English
    holds it and one is near enough, else the word as it is (``words``: theirs by length, as ``nearest_word``).
    None: it takes a search, and ``may_search`` is false."""
    tokens = tokenize([word])[0]
    if len(tokens) != 1 or index.holding(tokens, documents)[0] > 0 or tokens[0] in english():
        return Decided(word, searched=False)
    edits = edits_allowed(tokens[0], one_edit, two_edits)
    if not edits:
        return Decided(word, searched=False)
    if not may_search:
        return None
    near = nearest_word(tokens[0], index, edits, documents, words)
    return Decided(word if near is None else near, searched=True)


def _keep(kept: dict[str, V], key: str, value: V, most: int) -> None:
    """Keep ``value`` under ``key``, the oldest entry dropped first past ``most``."""
    with _kept_lock:
        if len(kept) >= most:
            del kept[next(iter(kept))]
        kept[key] = value
