"""Screening evaluation queries out of training data: exact and near repeats, and the exactness of the search."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolsel.training_data.near_duplicates import NearDuplicateIndex, jaccard, words


def test_words_fold_case_punctuation_and_compatibility_forms() -> None:
    assert words("Ｗhat's the WEATHER in Paris?!") == ("what", "s", "the", "weather", "in", "paris")


def test_exact_repeat_is_found_whatever_the_case_and_punctuation() -> None:
    index = NearDuplicateIndex({"metatool": ["What is the weather in Paris?"]}, threshold=0.8)
    assert index.exact("what is the weather in paris") == "metatool"
    assert index.exact("what is the weather in Rome") is None


def test_near_repeat_counts_from_the_threshold_on() -> None:
    base = "one two three four five six seven eight nine ten"
    index = NearDuplicateIndex({"a": [base]}, threshold=0.7)
    seven_of_ten = "one two three four five six seven x y z"  # 7 shared of 13 distinct: 0.54
    assert index.near(seven_of_ten) is None
    nine_of_ten = "one two three four five six seven eight nine eleven"  # 9 of 11: 0.82
    assert index.near(nine_of_ten) == "a"
    reordered = "ten nine eight seven six five four three two one"
    assert index.near(reordered) == "a"
    assert index.exact(reordered) is None


def test_a_threshold_met_exactly_counts() -> None:
    """7 shared words of 10 distinct is 0.7 even though 0.7 × 10 is not exactly 7 in floating point."""
    index = NearDuplicateIndex({"a": ["a b c d e f g h i"]}, threshold=0.7)
    assert jaccard(frozenset("abcdefghi"), frozenset("abcdefgj")) == 0.7
    assert index.near("a b c d e f g j") == "a"


def test_own_set_is_ignored_and_another_set_reported() -> None:
    index = NearDuplicateIndex({"seal_tools": ["book a flight to rome"], "metatool": ["book a flight to rome"]}, 0.8)
    assert index.exact("Book a flight to Rome", ignore="seal_tools") == "metatool"
    assert index.near("book a flight to rome please", ignore="metatool") == "seal_tools"
    only_own = NearDuplicateIndex({"metatool": ["book a flight to rome"]}, 0.8)
    assert only_own.near("book a flight to rome", ignore="metatool") is None


def test_empty_query_is_no_near_duplicate() -> None:
    assert NearDuplicateIndex({"a": ["?"]}, 0.8).near("!!") is None


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5])
def test_threshold_outside_the_unit_interval_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        NearDuplicateIndex({}, threshold)


VOCABULARY = [f"w{i}" for i in range(12)]
texts = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=9).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(
    indexed=st.lists(texts, min_size=1, max_size=25),
    asked=st.lists(texts, min_size=1, max_size=10),
    threshold=st.sampled_from([0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]),
)
def test_near_finds_exactly_what_comparing_every_pair_finds(
    indexed: list[str], asked: list[str], threshold: float
) -> None:
    index = NearDuplicateIndex({"set": indexed}, threshold)
    for text in asked:
        brute = any(jaccard(frozenset(words(text)), frozenset(words(i))) >= threshold for i in indexed)
        assert (index.near(text) == "set") == brute, text
