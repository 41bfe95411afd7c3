"""Pairs from labelled queries: group tagging, screening, tool ids and texts, and the caps."""

from collections import Counter

import pytest

from toolsel.evaluation.dataset import Tool
from toolsel.training_data.model import EXTERNAL, LabelledQuery, Pair, SourceSet
from toolsel.training_data.near_duplicates import NearDuplicateIndex
from toolsel.training_data.pairs import assign_group, capped, screen, shared_tools, source_pairs

WEATHER = Tool("weather", "Forecast for a city.", {"type": "object", "properties": {"city": {"type": "string"}}})
FLIGHTS = Tool("flights/search", "Find flights between two airports.", None)


def test_shared_tools_match_on_name_and_description_words() -> None:
    republished = Tool("Weather", "forecast for a city", None)
    other = Tool("weather", "Tomorrow's forecast.", None)
    assert shared_tools([republished, other], {"bench": [WEATHER, FLIGHTS], "none": []}) == {"bench": 1, "none": 0}


@pytest.mark.parametrize(
    ("declared", "shared", "group"),
    [
        (EXTERNAL, {"metatool": 0, "seal_tools": 0}, EXTERNAL),
        ("seal_tools", {"metatool": 0, "seal_tools": 4076}, "seal_tools"),
        ("toolbench_stb", {"toolbench_stb": 0}, "toolbench_stb"),  # derived from ToolBench though no tool matches
    ],
)
def test_group_is_the_declared_set_when_the_tools_agree(declared: str, shared: dict[str, int], group: str) -> None:
    assert assign_group("src", declared, shared) == group


@pytest.mark.parametrize(
    ("declared", "shared"),
    [(EXTERNAL, {"metatool": 3}), ("seal_tools", {"seal_tools": 5, "metatool": 1}), ("metatool", {"seal_tools": 2})],
)
def test_group_is_refused_when_tools_are_shared_with_another_set(declared: str, shared: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="src: declared"):
        assign_group("src", declared, shared)


def source(queries: list[LabelledQuery], catalog: str = "cat") -> SourceSet:
    return SourceSet("src", catalog, (WEATHER, FLIGHTS), tuple(queries))


def test_screen_drops_repeats_of_other_sets_and_counts_them_by_set() -> None:
    index = NearDuplicateIndex(
        {"metatool": ["What's the weather in Paris?"], "seal_tools": ["find flights from JFK to LAX tomorrow"]}, 0.8
    )
    queries = [
        LabelledQuery("1", "what's the weather in paris", ("weather",)),  # exact
        LabelledQuery("2", "find flights from JFK to LAX tomorrow morning", ("flights/search",)),  # 7 of 8
        LabelledQuery("3", "will it snow in Oslo", ("weather",)),
    ]
    screened = screen(source(queries), index)
    assert [q.id for q in screened.source.queries] == ["3"]
    assert screened.exact == Counter({"metatool": 1})
    assert screened.near == Counter({"seal_tools": 1})
    own = screen(source(queries), index, own_set="metatool")
    assert [q.id for q in own.source.queries] == ["1", "3"]


def test_source_pairs_name_tools_by_catalog_and_wire_name_with_the_given_text() -> None:
    queries = [LabelledQuery("q", "fly to rome and check the weather", ("flights/search", "weather"))]
    calls: list[str] = []

    def text_of(tool: Tool, wire: str) -> str:
        calls.append(wire)
        return f"{wire}: {tool.description}"

    pairs = source_pairs(source([*queries, LabelledQuery("r", "rain?", ("weather",))], "seal_tools"), "g", text_of)
    assert pairs[:2] == [
        Pair(
            "q",
            queries[0].text,
            "seal_tools/flights∕search",
            "flights∕search: Find flights between two airports.",
            "src",
            "g",
        ),
        Pair("q", queries[0].text, "seal_tools/weather", "weather: Forecast for a city.", "src", "g"),
    ]
    assert pairs[2].tool_id == "seal_tools/weather"
    assert sorted(calls) == ["flights∕search", "weather"]


def pair(source: str, query: int, tool: int, group: str = EXTERNAL) -> Pair:
    return Pair(f"q{query}", f"query {query}", f"{source}/t{tool}", f"tool {tool}", source, group)


def test_caps_limit_each_tool_of_each_source_and_each_source() -> None:
    pairs = [pair("a", q, q % 2) for q in range(40)] + [pair("b", q, 0, "metatool") for q in range(8)]
    kept = capped(pairs, max_per_tool=5, max_per_source=100, seed=0)
    assert Counter((p.source, p.tool_id) for p in kept) == {("a", "a/t0"): 5, ("a", "a/t1"): 5, ("b", "b/t0"): 5}
    per_source = capped(pairs, max_per_tool=100, max_per_source=7, seed=0)
    assert Counter(p.source for p in per_source) == {"a": 7, "b": 7}
    assert set(per_source) <= set(pairs)


def test_caps_are_deterministic_from_the_seed_and_independent_of_input_order() -> None:
    pairs = [pair("a", q, 0) for q in range(100)]
    first = capped(pairs, max_per_tool=10, max_per_source=1000, seed=1)
    assert capped(list(reversed(pairs)), max_per_tool=10, max_per_source=1000, seed=1) == first
    assert capped(pairs, max_per_tool=10, max_per_source=1000, seed=2) != first


def test_pairs_under_the_caps_are_all_kept_in_a_stable_order() -> None:
    pairs = [pair("b", 2, 0, "metatool"), pair("a", 1, 1), pair("a", 0, 1)]
    assert capped(pairs, 50, 10_000, 0) == [pair("a", 0, 1), pair("a", 1, 1), pair("b", 2, 0, "metatool")]
