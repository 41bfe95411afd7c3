"""The train/evaluation split and the query sample: seeded, disjoint, fraction respected."""

import re
from pathlib import Path

import pytest

from toolsel.evaluation.dataset import Query
from toolsel.evaluation.split import MAX_EXAMPLES_PER_TOOL, evaluated_sample, same_text, sample, split_queries

ROOT = Path(__file__).resolve().parents[3]


def queries(n: int, tools: int = 7) -> list[Query]:
    return [Query(f"q{i}", f"query number {i}", frozenset({f"tool{i % tools}"}), {"type": "x"}) for i in range(n)]


def test_split_is_reproducible_with_a_seed_and_changes_with_another() -> None:
    qs = queries(100)
    first, again, other = split_queries(qs, 0.5, 7), split_queries(qs, 0.5, 7), split_queries(qs, 0.5, 8)
    assert [q.id for q in first.train] == [q.id for q in again.train]
    assert first.examples == again.examples
    assert {q.id for q in first.train} != {q.id for q in other.train}


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9])
def test_split_is_disjoint_and_respects_the_fraction(fraction: float) -> None:
    qs = queries(200)
    split = split_queries(qs, fraction, 1)
    train, evaluate = {q.id for q in split.train}, {q.id for q in split.evaluate}
    assert not train & evaluate
    assert train | evaluate == {q.id for q in qs}
    assert len(train) == round(fraction * 200)


def test_no_evaluated_query_is_among_the_examples() -> None:
    qs = [*queries(50), Query("dup", "Query number 3", frozenset({"tool3"}))]  # same text as q3, other case
    split = split_queries(qs, 0.5, 3)
    examples = {" ".join(e.lower().split()) for texts in split.examples.values() for e in texts}
    assert all(" ".join(q.text.lower().split()) not in examples for q in split.evaluate)
    assert len(split.train) + len(split.evaluate) + split.overlap_dropped == len(qs)


def test_a_text_differing_only_in_case_spacing_or_punctuation_is_a_training_query_and_not_evaluated() -> None:
    twins = [
        Query("a", "What is the price of ethereum.", frozenset({"t"})),
        Query("b", "what is the  price of Ethereum?", frozenset({"t"})),
    ]
    split = split_queries(twins, 0.5, 0)  # one trains, and its twin is not evaluated
    assert (len(split.train), split.evaluate, split.overlap_dropped) == (1, [], 1)


def test_texts_are_compared_by_their_words_in_any_script() -> None:
    assert same_text("  Ethereum,  price?") == same_text("ethereum price") == "ethereum price"
    assert same_text("北京的天气") != same_text("上海的天气")  # not every Chinese query one text
    assert same_text("?!") != same_text("...")  # no word: compared whole


@pytest.mark.parametrize(
    "script", ["fit_confidence", "answer_size_grid", "measure_pipeline", "fit_fusion", "sweep_training"]
)
def test_the_in_process_scripts_rank_toolsel_evals_own_sample(script: str) -> None:
    """Their numbers stand beside the product's in docs/results.md: a sample of their own (the set's first queries
    drawn from in file order) shared a tenth of metatool's queries with ``toolsel eval``'s."""
    source = (ROOT / "scripts" / f"{script}.py").read_text()
    assert "evaluated_sample(bench.queries, " in source
    assert not re.search(r"(?<!evaluated_)sample\(", source)


def test_the_evaluated_sample_is_the_one_toolsel_eval_ranks_without_a_train_split() -> None:
    qs = queries(100)
    assert evaluated_sample(qs, 20, 3) == sample(split_queries(qs, 0.0, 3).evaluate, 20, 3) != sample(qs, 20, 3)


def test_training_queries_become_examples_of_their_relevant_tools() -> None:
    qs = [Query("a", "send mail", frozenset({"mail", "contacts"})), Query("b", "weather in Rome", frozenset({"w"}))]
    split = split_queries(qs, 0.5, 0)
    trained = split.train[0]
    assert {name for name, texts in split.examples.items() if trained.text in texts} == set(trained.relevant)
    assert "moved the first 1 (fraction 0.5)" in split.describe(0.5, 0)


def test_examples_are_capped_per_tool() -> None:
    split = split_queries(queries(MAX_EXAMPLES_PER_TOOL + 50, tools=1), 0.99, 0)
    assert len(split.examples["tool0"]) == MAX_EXAMPLES_PER_TOOL
    assert split.capped == len(split.train) - MAX_EXAMPLES_PER_TOOL


def test_without_a_fraction_everything_is_evaluated() -> None:
    split = split_queries(queries(10), 0.0, 0)
    assert not split.train
    assert not split.examples
    assert len(split.evaluate) == 10
    assert "no train split" in split.describe(0.0, 0)


def test_bad_fraction_is_refused() -> None:
    with pytest.raises(ValueError, match="fraction"):
        split_queries(queries(10), 1.0, 0)


def test_sample_is_seeded_ordered_and_bounded() -> None:
    qs = queries(100)
    picked = sample(qs, 10, 5)
    assert picked == sample(qs, 10, 5)
    assert len(picked) == 10
    assert [q.id for q in picked] == [q.id for q in qs if q in picked]
    assert sample(qs, 0, 5) == qs
    assert sample(qs, 500, 5) == qs
