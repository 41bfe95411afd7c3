"""Pairs from use: what counts as a positive, what a negative verdict vetoes, the most recent selections held back,
private tools and their queries kept out, and each tenant's share bounded as usage memory bounds it."""

from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np

from toolsel.evaluation.shadow import Scores, Shadow, rankings, scores
from toolsel.tuning.from_use import Evidence, Judged, Limits, pairs_from_use, split_recent, visible

START = datetime(2026, 1, 1, tzinfo=UTC)
SHARED = {f"p/t{i}": f"tool {i} text" for i in range(8)}
WIDE = Limits(budget=10_000, per_tool=1000, per_actor=1000)


def said(
    n: int, tool: str, positive: bool = True, tenant: str = "a", query: str | None = None, actor: str = ""
) -> Evidence:
    """Evidence of selection ``n`` (its time is n minutes in)."""
    return Evidence(
        f"s{n}", tenant, actor or f"selection:s{n}", query or f"query {n}", tool, positive, START + timedelta(minutes=n)
    )


def test_successes_and_good_verdicts_become_pairs_and_a_negative_verdict_vetoes_its_pair() -> None:
    evidence = [said(1, "p/t1"), said(2, "p/t2"), said(2, "p/t2", positive=False), said(2, "p/t3"), said(9, "p/t4")]
    split = pairs_from_use(evidence, SHARED, WIDE, share=0.2)
    assert sorted((p.query, p.tool_id) for p in split.pairs) == [("query 1", "p/t1"), ("query 2", "p/t3")]
    assert {p.tool_text for p in split.pairs} == {SHARED["p/t1"], SHARED["p/t3"]}


def test_the_most_recent_selections_are_held_back_and_their_queries_never_trained_on() -> None:
    evidence = [said(n, f"p/t{n % 8}") for n in range(10)] + [said(3, "p/t5", query="query 9")]
    older, recent = split_recent(evidence, 0.2)
    assert {e.selection for e in recent} == {"s8", "s9"}
    assert {e.selection for e in older} == {f"s{n}" for n in range(8)}
    split = pairs_from_use(evidence, SHARED, WIDE, share=0.2)
    assert [(j.query, j.relevant) for j in split.held_out] == [
        ("query 8", frozenset({"p/t0"})),
        ("query 9", frozenset({"p/t1"})),
    ]
    assert not {p.query for p in split.pairs} & {"query 8", "query 9"}
    assert len(split.pairs) == 8


def test_each_tenant_holds_back_its_own_most_recent_share_and_counts_as_much() -> None:
    """A tenant's burst of traffic before a tune does not make the held-back queries all its own: each tenant's
    recent share is held back, and each tenant's mean counts once, however many queries it has."""
    quiet = [said(n, f"p/t{n % 8}", tenant="quiet") for n in range(10)]
    burst = [said(100 + n, f"p/t{n % 8}", tenant="burst") for n in range(40)]
    _, recent = split_recent([*quiet, *burst], 0.2)
    assert Counter(e.tenant for e in recent) == {"quiet": 2, "burst": 8}
    judged = [Judged("quiet", "q", frozenset({"p/a"}))] + [Judged("burst", "q", frozenset({"p/b"}))] * 9
    measured = scores([["p/a"]] + [["p/c"]] * 9, judged)
    assert (measured.r5, measured.queries) == (0.5, 10)  # not 0.1: the quiet tenant's one query counts as much


def test_a_selection_that_touched_a_private_tool_is_left_out_whole() -> None:
    evidence = [said(1, "p/t1"), said(2, "p/t2"), said(2, "a-private/secret"), said(3, "p/t3", positive=False)]
    evidence += [said(3, "a-private/secret"), said(50, "p/t4")]
    split = pairs_from_use(evidence, SHARED, WIDE, share=0.1)
    assert [(p.query, p.tool_id) for p in split.pairs] == [("query 1", "p/t1")]
    assert split.left_out_private == 2


def test_one_actor_and_one_tenant_teach_a_tool_a_bounded_amount() -> None:
    flood = [said(n, "p/t1", actor="session:x", query=f"flood {n}") for n in range(100)]
    others = [said(200 + n, "p/t2", actor=f"session:{n}") for n in range(5)]
    split = pairs_from_use([*flood, *others, said(999, "p/t0")], SHARED, Limits(10_000, 4, 3), share=0.01)
    counts = Counter(p.tool_id for p in split.pairs)
    assert counts == {"p/t1": 3, "p/t2": 4}
    assert {p.query for p in split.pairs if p.tool_id == "p/t1"} == {"flood 99", "flood 98", "flood 97"}  # newest


def test_the_budget_is_shared_equally_between_tenants() -> None:
    big = [said(n, f"p/t{n % 8}", tenant="big") for n in range(300)]
    small = [said(1000 + n, f"p/t{n % 8}", tenant="small") for n in range(20)]
    split = pairs_from_use([*big, *small, said(5000, "p/t0")], SHARED, Limits(100, 1000, 1000), share=0.001)
    assert split.by_tenant == {"big": 299, "small": 19}  # each tenant's most recent selection held back
    assert len(split.pairs) == 100
    assert Counter(p.query.startswith("query 1") and int(p.query.split()[1]) >= 1000 for p in split.pairs) == {
        True: 19,
        False: 81,
    }


def test_a_tenant_ranks_the_shared_tools_and_its_own() -> None:
    owners = {"p/a": "*", "p/b": "t1", "p/c": "t2"}
    assert visible("t1", owners) == ["p/a", "p/b"]
    tools = np.eye(3, dtype=np.float32)
    queries = np.array([[0.1, 0.5, 0.9], [0.1, 0.5, 0.9]], dtype=np.float32)
    judged = [Judged("t1", "q", frozenset({"p/a"})), Judged("t2", "q", frozenset({"p/c"}))]
    ranked = rankings(queries, tools, list(owners), owners, judged)
    assert ranked == [["p/b", "p/a"], ["p/c", "p/a"]]
    measured = scores(ranked, judged)
    assert (measured.r5, measured.queries) == (1.0, 2)
    assert measured.ndcg10 == (1 / np.log2(3) + 1) / 2


def test_the_candidate_switches_only_when_it_wins_by_the_margin() -> None:
    current = Scores(0.8, 0.70, 10)
    assert Shadow(current, Scores(0.9, 0.72, 10), 0.01).wins
    assert not Shadow(current, Scores(0.9, 0.705, 10), 0.01).wins
    assert not Shadow(current, Scores(0.0, 0.0, 0), -1.0).wins  # nothing measured: nothing to win on
