"""Misspelt query words repaired against the catalog's own words, before anything reads the query.

A word BM25 does not know matches nothing, and the model reads a misspelling as pieces of other words ("wether
forcast for tomorow" is nearer a surf report than the weather tool), so a misspelt request gets a wrong answer
said to be `no_match`. The catalog's vocabulary is the dictionary: a query word that no tool's text holds and no
English dictionary lists (pyspellchecker's word list: "trending", "tastings" and "Paris" are words, "forcast" is
not) becomes the catalog word fewest edits away (transpositions count one), as many edits allowed as
Elasticsearch's AUTO fuzziness gives for its length, the most common such word where several are as near. A word
some tool holds is never changed, nor a name (a capital past the query's first letter: "Binance"), a part of an
address or identifier, or a word too short to tell a typo from another word.
"""

import re
import threading
from collections.abc import Iterable
from functools import cache
from weakref import WeakKeyDictionary

import numpy as np
import numpy.typing as npt
from rapidfuzz import process
from rapidfuzz.distance import OSA
from spellchecker import SpellChecker

from toolsel.services.selector.retrieval import LexicalIndex, tokenize
from toolsel.settings import Settings

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


def nearest_word(word: str, index: LexicalIndex, edits: int) -> str | None:
    """The catalog word at most ``edits`` away from ``word`` (fewest edits, then the most tools holding it, then
    the first in alphabetical order, so that a copy spliced from changes repairs as one read whole); None when there
    is none."""
    words, idf = index.words
    found = process.extract(word, words, scorer=OSA.distance, score_cutoff=edits, limit=None)
    if not found:
        return None
    _, _, best = min(found, key=lambda hit: (hit[1], idf[hit[2]], hit[0]))
    return words[best]


REPAIRS_KEPT = 256
"""Repaired queries kept per catalog copy. A selector repairs a request's query twice: ahead of the selection, to
embed the text the selection will read, and in it; past the first, a repair costs a lookup."""

_repaired: "WeakKeyDictionary[LexicalIndex, dict[tuple[str, int, int], str]]" = WeakKeyDictionary()
_repaired_lock = threading.Lock()


def repair(query: str, index: LexicalIndex, settings: Settings) -> str:
    """The query with each misspelt word (neither a tool's text nor English holds it, and not a name) replaced by
    its nearest catalog word, where one is near enough; the query as it was with ``TOOLSEL_QUERY_SPELLING`` off.
    Kept for ``index`` (a catalog copy's words), the last ``REPAIRS_KEPT`` queries."""
    if not settings.query_spelling:
        return query
    key = (query, settings.spelling_one_edit_length, settings.spelling_two_edits_length)
    with _repaired_lock:
        kept = _repaired.setdefault(index, {})
        found = kept.get(key)
    if found is None:
        found = _repair(query, index, settings)
        with _repaired_lock:
            if len(kept) >= REPAIRS_KEPT:
                del kept[next(iter(kept))]
            kept[key] = found
    return found


def _repair(query: str, index: LexicalIndex, settings: Settings) -> str:
    def fixed(match: re.Match[str]) -> str:
        word = match.group(0)
        tokens = tokenize([word])[0]
        name = match.start() > 0 and not word.islower()
        if name or len(tokens) != 1 or index.idf(tokens)[0] > 0 or tokens[0] in english():
            return word
        edits = edits_allowed(tokens[0], settings.spelling_one_edit_length, settings.spelling_two_edits_length)
        near = nearest_word(tokens[0], index, edits) if edits else None
        return word if near is None else near

    return _WORD.sub(fixed, query)
