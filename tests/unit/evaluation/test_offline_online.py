"""The pure parts of the offline and online evaluations: modes, scoring, the agent's reports, the stream."""

from dataclasses import asdict
from pathlib import Path
from typing import cast
from uuid import uuid4

from toolsel.client import ToolselClient
from toolsel.contracts import (
    HealthReply,
    ScoreBreakdown,
    ScoredTool,
    SelectReply,
    SelectRequest,
    TokenEstimate,
    Verdict,
)
from toolsel.errors import Timeout
from toolsel.evaluation.dataset import Query
from toolsel.evaluation.offline import answer_size, plan_modes, score
from toolsel.evaluation.online import Point, agent_events, holdout_split, learner_handled, stream, wait_for_learner
from toolsel.evaluation.plan import Sighting
from toolsel.evaluation.ranking import BenchCatalog, rank
from toolsel.evaluation.report import write_online
from toolsel.evaluation.split import same_text


def test_modes_with_and_without_a_train_split() -> None:
    assert [m.name for m in plan_modes(False)] == ["bm25", "vector (description)", "hybrid", "full pipeline"]
    modes = {m.name: m for m in plan_modes(True)}
    assert modes["tool2vec"].catalog == "examples"
    assert modes["tool2vec"].retrieval == "vector"
    assert modes["hybrid"].catalog == "examples"
    assert not modes["hybrid"].rerank
    assert modes["full pipeline"].rerank
    assert modes["bm25"].catalog == modes["vector (description)"].catalog == "text"


def test_score_overall_and_per_subset() -> None:
    queries = [
        Query("1", "x", frozenset({"a"}), {"type": "single"}),
        Query("2", "y", frozenset({"b"}), {"type": "single"}),
        Query("3", "z", frozenset({"a", "b"}), {"type": "multi"}),
    ]
    result = score([["a", "b"], ["a", "b"], ["b", "c"]], queries, ["type"])
    assert result["n"] == 3
    assert result["overall"]["R@1"] == (1 + 0 + 0.5) / 3
    assert result["subsets"]["type=single"]["n"] == 2
    assert result["subsets"]["type=single"]["MRR"] == (1 + 0.5) / 2
    assert result["subsets"]["type=multi"]["Complete@5"] == 0.0


def reply(*names: str) -> SelectReply:
    tools = [
        ScoredTool(plugin_id="p-0", name=n, description="", parameters={}, score=0.5, breakdown=ScoreBreakdown())
        for n in names
    ]
    return SelectReply(
        selection_id=uuid4(),
        tools=tools,
        context_key="free::general",
        method="hybrid",
        tokens=TokenEstimate(selected=0, catalog=0, saved=0),
        latency_ms=1.0,
    )


CATALOG = BenchCatalog(["p-0"], "t", {"a": "a", "b": "b", "c∕d": "c/d"})


async def test_a_whole_answer_counts_every_tool_whose_tokens_it_counts_a_pin_included() -> None:
    """A pin joins the reply whatever the plugin filter says (a shared plugin's, on configured servers): its
    definition is in ``tokens.selected``, so it is one of the answer's tools too, not tokens for no tool."""

    class Selector:
        async def select(self, request: SelectRequest) -> SelectReply:
            answer = reply("a", "c∕d")
            pin = answer.tools[0].model_copy(update={"plugin_id": "shared-pins", "name": "pinned"})
            tokens = TokenEstimate(selected=300, catalog=900, saved=600)
            return answer.model_copy(update={"tools": [*answer.tools, pin], "tokens": tokens})

    queries = [Query("1", "q", frozenset({"a", "c/d"}))]
    whole: list[tuple[int, int]] = []
    rankings = await rank(
        cast(ToolselClient, Selector()), CATALOG, queries, retrieval="hybrid", rerank=True, k=5, seed=0, answers=whole
    )
    assert rankings == [["a", "c/d"]]  # the set's tools, for the metrics
    assert answer_size(rankings, whole, queries) == {"tools": 3.0, "tokens": 300.0, "complete": 1.0}


def test_agent_calls_the_first_relevant_tool_and_reviews_every_offered_one() -> None:
    answer = reply("a", "c∕d", "b")
    outcome, review = agent_events(answer, Query("1", "q", frozenset({"c/d", "b"})), CATALOG)
    assert outcome.selection_id == review.selection_id == answer.selection_id
    assert [(c.name, c.success) for c in outcome.calls] == [("c∕d", True)]
    assert [(r.name, r.verdict) for r in review.reviews] == [
        ("a", Verdict.UNRELATED),
        ("c∕d", Verdict.PERFECT),
        ("b", Verdict.PERFECT),
    ]


def test_agent_calls_nothing_when_no_relevant_tool_is_offered() -> None:
    outcome, review = agent_events(reply("a"), Query("1", "q", frozenset({"b"})), CATALOG)
    assert outcome.calls == []
    assert [r.verdict for r in review.reviews] == [Verdict.UNRELATED]


def test_holdout_is_never_streamed_and_the_stream_cycles() -> None:
    queries = [Query(str(i), f"q{i}", frozenset({"a"})) for i in range(10)]
    holdout, pool, _ = holdout_split(queries, 3, seed=1)
    assert holdout == holdout_split(queries, 3, seed=1).holdout
    assert not {q.id for q in holdout} & {q.id for q in pool}
    events = stream(pool, 16)
    assert len(events) == 16
    assert events[7] == events[0]
    assert stream([], 5) == []


def test_a_failing_tool_fails_is_reviewed_broken_and_the_agent_calls_the_next_relevant_one() -> None:
    answer = reply("a", "c∕d", "b")
    outcome, review = agent_events(answer, Query("1", "q", frozenset({"c/d", "b"})), CATALOG, frozenset({"c/d"}))
    assert [(c.name, c.success) for c in outcome.calls] == [("c∕d", False), ("b", True)]
    assert outcome.calls[0].error
    assert [(r.name, r.verdict) for r in review.reviews] == [
        ("a", Verdict.UNRELATED),
        ("c∕d", Verdict.BROKEN),
        ("b", Verdict.PERFECT),
    ]


def test_the_holdout_leaves_half_of_a_small_set_to_stream() -> None:
    queries = [Query(str(i), f"q{i}", frozenset({"a"})) for i in range(9)]
    holdout, pool, _ = holdout_split(queries, 200, seed=0)
    assert (len(holdout), len(pool)) == (4, 5)


def test_a_held_out_querys_text_is_never_streamed_under_another_id() -> None:
    """toolbench_stb holds G2_category/43200 and /43201, one text; metatool "… ethereum." and "… Ethereum": the
    stream would teach the very answer a held-out twin measures."""
    queries = [Query(f"{i}", f"query {i}", frozenset({"a"})) for i in range(20)]
    twins = [Query(f"{q.id}-twin", f"{q.text.upper()}.", q.relevant) for q in queries]
    holdout, pool, dropped = holdout_split([*queries, *twins], 10, seed=0)
    held = {same_text(q.text) for q in holdout}
    assert not [q for q in pool if same_text(q.text) in held]
    assert dropped == 2 * len(held) - len(holdout) > 0  # every held-out text's other copy, when not held out too
    assert len(holdout) + len(pool) + dropped == len(queries) + len(twins)


def test_an_online_result_writes_its_curve_and_the_tracked_tool(tmp_path: Path) -> None:
    result = {
        "set": "tiny",
        "curve": [asdict(Point(0, 0.5, 0.4)), asdict(Point(10, 0.6, 0.5, learner_wait_s=4.0))],
        "scenario": {"name": "drift", "marks": {"drift": 3, "recovery": 6}, "sightings": [asdict(Sighting(4, 2))]},
    }
    written = write_online(tmp_path, result)
    assert written == tmp_path / "tiny-drift-curve.csv"
    assert written.read_text().splitlines() == [
        "events,R@5,NDCG@10,learner_wait_s",
        "0,0.5000,0.4000,0.0",
        "10,0.6000,0.5000,4.0",
    ]
    assert (tmp_path / "tiny-drift-tool.csv").read_text().splitlines() == ["event,rank", "4,2"]
    assert (tmp_path / "tiny-drift-curve.png").read_bytes().startswith(b"\x89PNG")
    plain = write_online(tmp_path, {**result, "scenario": {"name": "stream", "marks": {}, "sightings": []}})
    assert plain == tmp_path / "tiny-curve.csv"
    assert (tmp_path / "tiny-curve.png").exists()
    assert not (tmp_path / "tiny-tool.csv").exists()


async def test_the_learner_has_handled_each_event_once_however_often_it_was_redelivered() -> None:
    class Learner:
        async def health(self, service: str) -> HealthReply:
            counters = {"applied": 40, "reviews": 38, "dead_letters": 2, "duplicates": 500, "feedback": 7}
            return HealthReply(service=service, version="test", details=counters)

    assert await learner_handled(cast(ToolselClient, Learner())) == 80  # not the 500 redeliveries


async def test_waiting_for_a_learner_too_busy_to_answer_its_health_request_goes_on_polling() -> None:
    class Busy:
        polls = 0

        async def health(self, service: str) -> HealthReply:
            self.polls += 1
            if self.polls < 3:  # the client's timeout, as a loaded learner gives it
                raise Timeout.saying(f"no answer to toolsel.rpc.health.{service} within 2 s")
            return HealthReply(service=service, version="test", details={"applied": 5})

    busy = Busy()
    assert await learner_handled(cast(ToolselClient, busy)) is None
    await wait_for_learner(cast(ToolselClient, busy), 5, settle_s=0.0)
    assert busy.polls == 3


async def test_waiting_for_the_learner_returns_how_long_it_took_to_catch_up() -> None:
    class Learner:
        polls = 0

        async def health(self, service: str) -> HealthReply:
            self.polls += 1
            return HealthReply(service=service, version="test", details={"applied": 10 * self.polls})

    learner = Learner()
    waited = await wait_for_learner(cast(ToolselClient, learner), target=20, settle_s=0.0)
    assert learner.polls == 2  # behind at the first look, caught up at the second, half a second later
    assert 0.5 <= waited < 5.0
