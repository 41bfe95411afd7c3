"""Choosing training pairs and cutting them into batches: groups left out, fair shares, no repeat in a batch."""

import json
from collections import Counter
from pathlib import Path

import pytest

from toolsel.tuning.pairs import Pair, batches, choose, fair_shares, read_pairs


def pairs(group: str, n: int, tools: int = 10) -> list[Pair]:
    texts = [f"tool {i % tools} " * (i % 7 + 1) for i in range(n)]
    return [Pair(f"{group} query {i}", f"{group}/t{i % tools}", texts[i], group) for i in range(n)]


def test_fair_shares_give_a_small_group_all_it_has_and_split_the_rest() -> None:
    assert fair_shares({"a": 10, "b": 1000, "c": 1000}, 310) == {"a": 10, "b": 150, "c": 150}
    assert fair_shares({"a": 10, "b": 20}, 1000) == {"a": 10, "b": 20}
    assert sum(fair_shares({"a": 7, "b": 500, "c": 501}, 400).values()) == 400


def test_choose_leaves_groups_out_keeps_the_budget_and_is_seeded() -> None:
    everything = pairs("metatool", 300) + pairs("seal_tools", 300) + pairs("external", 50)
    chosen = choose(everything, leave_out=["metatool"], budget=200, seed=3)
    assert Counter(p.group for p in chosen) == {"seal_tools": 150, "external": 50}
    assert chosen == choose(list(reversed(everything)), leave_out=["metatool"], budget=200, seed=3)
    assert chosen != choose(everything, leave_out=["metatool"], budget=200, seed=4)
    with pytest.raises(ValueError, match="budget"):
        choose(everything, budget=0, seed=0)


def test_no_batch_holds_a_tool_or_a_query_twice() -> None:
    many = [*pairs("a", 400, tools=12), Pair("a query 1", "a/t99", "other", "a")]  # a query with two tools
    cut = batches(many, 8, seed=1)
    assert all(len({p.tool_id for p in b}) == len(b) == len({p.query for p in b}) for b in cut)
    assert all(2 <= len(b) <= 8 for b in cut)
    assert sum(map(len, cut)) >= len(many) - 1  # all but perhaps a last one alone: twelve tools fill batches of 8
    assert cut == batches(many, 8, seed=1)


def test_a_few_tools_with_many_queries_lose_no_pair() -> None:
    few = pairs("metatool", 600, tools=40)  # tool texts repeat, so the length sort puts a tool's pairs together
    assert sum(map(len, batches(few, 16, seed=2))) >= 599


def test_batches_hold_texts_of_like_length() -> None:
    mixed = [Pair(f"q{i}", f"t{i}", "word " * (1 + i % 50), "a") for i in range(2000)]
    spread = [max(len(p.tool_text) for p in b) - min(len(p.tool_text) for p in b) for b in batches(mixed, 16, 0)]
    assert sorted(spread)[len(spread) // 2] < 0.2 * len("word " * 50)


def test_read_pairs_names_the_line_of_a_pair_without_a_field(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    good = {"query": "q", "tool_id": "s/t", "tool_text": "t: does", "group": "s", "source": "x"}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({"query": "q"}) + "\n")
    with pytest.raises(ValueError, match=r"pairs.jsonl:3: a pair needs 'tool_id'"):
        read_pairs(path)
    path.write_text(json.dumps(good) + "\n")
    assert read_pairs(path) == [Pair("q", "s/t", "t: does", "s")]
