"""Misspelt query words repaired against the catalog's words; words, names and data left as they are."""

import random

import numpy as np
import pytest
from spellchecker import SpellChecker

from toolsel.services.selector import spelling
from toolsel.services.selector.retrieval import LexicalIndex
from toolsel.services.selector.spelling import WordList, edits_allowed, english, repair
from toolsel.settings import Settings

TEXTS = [
    "weather forecast for tomorrow and the week",
    "hourly weather forecast by city",
    "renting apartments and houses",
    "finance news and stock quotes",
    "send an email to a contact",
    "wether to include sub teams",  # a catalog's own typo: rarer than the word it misspells
]


@pytest.fixture(scope="module")
def index() -> LexicalIndex:
    return LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings()


def test_misspelt_words_become_the_catalogs(index: LexicalIndex, settings: Settings) -> None:
    assert repair("wheather forcast for tomorow?", index, settings) == "weather forecast for tomorrow?"
    assert repair("Forcast (hourly)", index, settings) == "forecast (hourly)"  # the query's first word, a capital


def test_two_edits_only_for_long_words(index: LexicalIndex, settings: Settings) -> None:
    assert repair("apartmants", index, settings) == "apartments"  # 10 letters: one edit is allowed, and two
    assert repair("rentng", index, settings) == "renting"  # 6 letters: one
    assert repair("rntng", index, settings) == "rntng"  # 5 letters, two edits away


def test_words_names_and_data_stay(index: LexicalIndex, settings: Settings) -> None:
    kept = [
        "what is trending",  # an English word no tool holds, one edit from "renting"
        "price of Binance",  # a name, one edit from "finance"
        "email info@mycompany.com about 'wether'",  # an address and a quoted value
        "emal",  # too short for an edit
        "wether to include",  # a word some tool holds
    ]
    assert [repair(q, index, settings) for q in kept] == kept


def test_off_by_setting(index: LexicalIndex) -> None:
    assert repair("wheather forcast", index, Settings(query_spelling=False)) == "wheather forcast"


def test_the_most_common_of_equally_near_words(settings: Settings) -> None:
    index = LexicalIndex.of_texts(["stock quotes", "stock prices", "stack traces"], k1=1.2, b=0.75)
    assert repair("stpck", index, settings) == "stock"  # one edit from "stock" (2 tools) and "stack" (1)


@pytest.mark.parametrize("texts", [["stock quotes", "stack traces"], ["stack traces", "stock quotes"]])
def test_of_equally_near_and_common_words_the_first_alphabetically_whatever_the_catalog_order(
    texts: list[str], settings: Settings
) -> None:
    """A copy spliced from changes holds its words in another order than one read whole: both repair alike."""
    assert repair("stpck", LexicalIndex.of_texts(texts, k1=1.2, b=0.75), settings) == "stack"


def test_only_the_documents_given_count_as_the_catalog(index: LexicalIndex, settings: Settings) -> None:
    """A tenant's query is read against the tools it may see: a word only the others' hold is neither kept as a
    catalog word nor reached by a repair; the repairs kept for one set of documents are not another's."""
    sees = np.array([True, True, False, False, False, True])  # the weather tools and the typo: no renting
    assert repair("apartmants rentng", index, settings, sees) == "apartmants rentng"
    assert repair("apartmants rentng", index, settings) == "apartments renting"
    typo = LexicalIndex.of_texts(["weather forecast", "forecst tools"], k1=1.2, b=0.75)  # a tool's own typo
    assert repair("forecst", typo, settings, np.array([True, True])) == "forecst"  # a word a tool it sees holds
    assert repair("forecst", typo, settings, np.array([True, False])) == "forecast"  # only another's holds it


def test_auto_fuzziness() -> None:
    assert [edits_allowed("x" * n, 5, 8) for n in (4, 5, 7, 8, 12)] == [0, 1, 1, 2, 2]


def test_a_repair_is_kept_for_its_catalog_and_settings_only(index: LexicalIndex, settings: Settings) -> None:
    assert repair("weathr", index, settings) == "weather"
    assert repair("weathr", index, settings) == "weather"  # kept
    other = LexicalIndex.of_texts(["leather goods"], k1=1.2, b=0.75)  # another catalog copy's words
    assert repair("weathr", other, settings) == "weathr"
    assert repair("weathr", index, Settings(spelling_one_edit_length=7)) == "weathr"  # no edit under 7 letters


def test_the_word_list_answers_as_the_checker_does() -> None:
    """Every English word, and seeded misspellings, capitals and accents of a sample of them: each is in the
    compact list exactly when pyspellchecker's checker holds it."""
    checker = SpellChecker(distance=1)
    words = list(checker.word_frequency.keys())
    rng = random.Random(0)
    probes = list(words)
    for word in rng.sample(words, 20_000):
        at = rng.randrange(len(word))
        letter = rng.choice("abcdefghijklmnopqrstuvwxyzéß")
        probes += [
            word[:at] + word[at + 1 :],  # a letter dropped
            word[:at] + letter + word[at + 1 :],  # one replaced
            word[:at] + letter + word[at:],  # one added
            word[:at] + word[at + 1 : at + 2] + word[at : at + 1] + word[at + 2 :],  # two swapped
            word.upper(),
            word.title(),
        ]
    found = [probe in english() for probe in probes]
    assert found == [probe in checker for probe in probes]
    assert 0 < found.count(False) < len(found)


def test_word_list_lengths_and_case() -> None:
    words = WordList(["Paris", "tastings", "café", "x"])
    assert ["paris" in words, "PARIS" in words, "café" in words, "cafe" in words, "x" in words] == [
        True,
        True,
        True,
        False,
        True,
    ]
    assert ["pari" in words, "parisx" in words, "" in words, "tasting" in words] == [False] * 4


def test_a_word_is_decided_once_per_catalog_copy(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new query whose words earlier queries held costs lookups, and reads as if each word were decided anew."""
    decided: list[str] = []
    decide = spelling.fixed

    def counted(word: str, *args: object, **kwargs: bool) -> spelling.Decided | None:
        decided.append(word)
        return decide(word, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(spelling, "fixed", counted)
    index = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)
    assert repair("wheather forcast for hourly", index, settings) == "weather forecast for hourly"
    assert decided == ["wheather", "forcast", "for", "hourly"]
    assert repair("hourly forcast, wheather", index, settings) == "hourly forecast, weather"
    assert decided == ["wheather", "forcast", "for", "hourly"]  # nothing decided again


def test_words_kept_are_bounded(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spelling, "WORDS_KEPT", 3)
    fresh = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)
    assert repair("alpha bravo charlie delta forcast", fresh, settings) == "alpha bravo charlie delta forecast"
    kept = spelling._kept[fresh][(settings.spelling_one_edit_length, settings.spelling_two_edits_length, b"")]
    assert list(kept.words) == ["charlie", "delta", "forcast"]  # the oldest dropped first


def test_a_query_looks_up_at_most_its_share_of_unknown_words(index: LexicalIndex) -> None:
    """A query of hundreds of unknown words (one tenant's made-up vocabulary at that) held a selector for tens of
    seconds, every tenant's selects waiting: past ``TOOLSEL_SPELLING_MAX_WORDS`` lookups the words stay."""
    fresh = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)  # nothing kept from the other tests
    settings = Settings(spelling_max_words=2)
    assert repair("wheather forcast for tomorow", fresh, settings) == "weather forecast for tomorow"
    assert repair("tomorow forcast", fresh, settings) == "tomorrow forecast"  # "forcast" decided before: no lookup
    untouched = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)
    assert repair("wheather", untouched, Settings(spelling_max_words=0)) == "wheather"


def test_the_bound_takes_a_querys_first_unknown_words_whatever_was_asked_before() -> None:
    """Two copies of a selector asked one query read it alike: a word an earlier query searched counts against the
    bound where it stands, so what is repaired depends on the query alone (a copy asked "forcast" first repaired a
    ninth misspelt word the other left)."""
    settings = Settings(spelling_max_words=2)
    query = "wheather forcast for tomorow"
    first = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)
    second = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)
    assert repair("tomorow", second, settings) == "tomorrow"  # only the second copy was asked this before
    assert repair(query, first, settings) == repair(query, second, settings) == "weather forecast for tomorow"


def test_a_tenants_query_is_searched_among_the_words_of_its_tools_alone(index: LexicalIndex) -> None:
    mine = np.array([True, True, False, False, False, False])
    assert set(index.words_of(mine)) == {"weather", "forecast", "tomorrow", "week", "hourly", "city"}
    assert set(index.words_of(None)) == set(index.words_of(np.ones(6, dtype=bool)))  # every document's
    assert spelling.nearest_word("apartmants", index, 2, mine) is None  # another tenant's word is not searched
    assert spelling.nearest_word("apartmants", index, 2) == "apartments"


def test_a_repair_that_takes_a_search_is_not_made_at_once(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """``repair_at_once`` never searches the catalog's words (the selector makes such a repair off the event loop);
    once ``repair`` has made it, it is kept, and made at once."""
    searches: list[str] = []
    search = spelling.nearest_word

    def counted(word: str, *args: object, **kwargs: object) -> str | None:
        searches.append(word)
        return search(word, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(spelling, "nearest_word", counted)
    fresh = LexicalIndex.of_texts(TEXTS, k1=1.2, b=0.75)
    assert spelling.repair_at_once("hourly weather forecast", fresh, settings) == "hourly weather forecast"
    assert spelling.repair_at_once("wheather forcast for hourly", fresh, settings) is None
    assert searches == []
    assert repair("wheather forcast for hourly", fresh, settings) == "weather forecast for hourly"
    assert spelling.repair_at_once("wheather forcast for hourly", fresh, settings) == "weather forecast for hourly"
    assert spelling.repair_at_once("hourly forcast", fresh, settings) == "hourly forecast"  # its words decided
    assert searches == ["wheather", "forcast"]
