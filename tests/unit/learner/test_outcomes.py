"""What outcomes teach (pure): only offered tools visible to the selection's tenant count, posteriors are kept
per tenant and context and discounted in event order, and one actor's successes count a bounded number of
times."""

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from toolsel.contracts import OutcomeEvent, ToolCall
from toolsel.contracts.identity import OPERATOR, tenant_scope
from toolsel.services.learner.outcomes import (
    Credits,
    OutcomeRules,
    Posterior,
    Stepped,
    call_counters,
    capped_calls,
    credit_keys,
    cut_errors,
    not_after,
    observations,
    offered_only,
    split_inserted,
    step,
    taught_with,
    teachable,
    within,
)
from toolsel.services.learner.reward import discounted
from toolsel.services.learner.usage import POSITIVE, UsageRules
from toolsel.store.learning import Registered
from toolsel.tenancy import actor

TOOLS = {"a/mine": Registered(1, "acme"), "s/shared": Registered(2, "*"), "b/theirs": Registered(3, "other")}
RULES = OutcomeRules(1.0, 1.0, 0.0, 0.9, UsageRules("tenant", 64, 64.0, 3), 2, 8)
T0 = datetime(2025, 1, 1, tzinfo=UTC)
Selection = dict[str, Any]


def _selection(
    keys: list[str],
    tenant: str = "acme",
    session: str | None = "s1",
    user: str | None = None,
    needs: list[str | None] | None = None,
    similarities: list[float | None] | None = None,
) -> Selection:
    return {
        "selection_id": uuid4(),
        "tenant_id": tenant,
        "session_id": session,
        "user_id": user,
        "query": "weather in Oslo",
        "context_key": "free::general",
        "keys": keys,
        "needs": needs or [None] * len(keys),
        "similarities": similarities or [None] * len(keys),
    }


def _call(key: str, success: bool) -> ToolCall:
    plugin_id, name = key.split("/")
    return ToolCall(plugin_id=plugin_id, name=name, success=success)


def _outcome(selection: Selection, *calls: ToolCall, at: int = 0) -> OutcomeEvent:
    return OutcomeEvent(
        selection_id=selection["selection_id"], calls=list(calls), occurred_at=T0 + timedelta(seconds=at)
    )


def _prior() -> Posterior:
    return Posterior(RULES.prior_alpha, RULES.prior_beta, None)


def _learn(selection: Selection, *events: OutcomeEvent, used: Credits | None = None) -> tuple[Stepped, Credits]:
    selections: dict[UUID, Selection] = {selection["selection_id"]: selection}
    ids = {key: t.id for key, t in TOOLS.items()}
    offered = offered_only(events, selections, TOOLS)
    counting, credits = capped_calls(offered, selections, ids, used or Credits({}, {}), RULES.usage)
    seen = observations(counting, selections, TOOLS, RULES.not_called_penalty)
    return step(seen, {o.key: _prior() for o in seen}, RULES), credits


def test_only_offered_tools_the_tenant_may_see_can_be_taught() -> None:
    selection = _selection(["b/theirs", "a/mine", "s/shared", "x/unregistered"])
    assert teachable(selection, TOOLS) == ["a/mine", "s/shared"]


def test_calls_to_tools_not_offered_or_not_visible_count_nowhere() -> None:
    selection = _selection(["a/mine", "b/theirs"])
    (event,) = offered_only(
        [_outcome(selection, _call("a/mine", True), _call("b/theirs", False), _call("s/shared", False))],
        {selection["selection_id"]: selection},
        TOOLS,
    )
    assert [c.key for c in event.calls] == ["a/mine"]


def test_a_posterior_is_kept_per_tool_tenant_and_context() -> None:
    selection = _selection(["a/mine", "s/shared"])
    stepped, _ = _learn(selection, _outcome(selection, _call("a/mine", True)))
    assert set(stepped.posteriors) == {(1, "acme", "free::general"), (2, "acme", "free::general")}
    mine = stepped.posteriors[(1, "acme", "free::general")]
    assert (mine.alpha, mine.beta, mine.successes, mine.last_success_at) == (2.0, 1.0, 1, T0)
    shown = stepped.posteriors[(2, "acme", "free::general")]
    assert (shown.alpha, shown.beta, shown.selections) == (1.0, 1.0, 1)  # an impression: no evidence, no decay


def test_calls_of_a_shared_tool_count_for_the_tenant_whose_selection_served_them() -> None:
    acme, globex = _selection(["s/shared"]), _selection(["s/shared"], tenant="globex")
    selections = {s["selection_id"]: s for s in (acme, globex)}
    events = [
        _outcome(acme, _call("s/shared", False)),
        _outcome(acme, _call("s/shared", False)),
        _outcome(globex, _call("s/shared", True)),
    ]
    counters = call_counters(events, selections, {"s/shared": 2})
    assert {key: (c.calls, c.failures) for key, c in counters.items()} == {(2, "acme"): (2, 2), (2, "globex"): (1, 0)}


def test_evidence_above_the_prior_is_discounted_on_each_update() -> None:
    assert discounted(5.0, 1.0, 0.9, 1.0) == pytest.approx(1.0 + 0.9 * 4.0 + 1.0)
    assert discounted(1.0, 1.0, 0.5, 0.0) == 1.0


def test_a_tool_that_starts_failing_falls_and_one_that_recovers_comes_back() -> None:
    rules = OutcomeRules(1.0, 1.0, 0.9, 0.9, UsageRules("tenant", 64, 64.0, 10_000), 2, 8)
    selection = _selection(["a/mine"], session=None)
    selections = {selection["selection_id"]: selection}

    def mean_after(*successes: bool) -> float:
        events = [_outcome(selection, _call("a/mine", ok), at=i) for i, ok in enumerate(successes)]
        seen = observations(offered_only(events, selections, TOOLS), selections, TOOLS, 0.0)
        (p,) = step(seen, {seen[0].key: Posterior(1.0, 1.0, None)}, rules).posteriors.values()
        return p.alpha / (p.alpha + p.beta)

    worked = (True,) * 200
    assert mean_after(*worked) > 0.9
    assert mean_after(*worked, *(False,) * 30) < 0.2  # without discounting it would still be about 0.87
    assert mean_after(*worked, *(False,) * 30, *(True,) * 60) > 0.9


def test_one_actor_counts_at_most_its_credits_per_tool() -> None:
    selection = _selection(["a/mine"])
    stepped, credits = _learn(selection, *(_outcome(selection, _call("a/mine", True), at=i) for i in range(100)))
    (p,) = stepped.posteriors.values()
    assert p.successes == RULES.usage.credits_per_actor
    assert p.selections == 100
    assert p.alpha - RULES.prior_alpha <= RULES.usage.credits_per_actor
    assert credits == Credits({("acme", "session:s1", 1): RULES.usage.credits_per_actor}, {})
    assert len(stepped.examples) == RULES.usage.credits_per_actor
    assert {(e.tool_id, e.scope, e.polarity) for e in stepped.examples} == {(1, "acme", POSITIVE)}


def test_credits_used_before_are_remembered_and_failures_still_count() -> None:
    selection = _selection(["a/mine"])
    used = Credits({("acme", "session:s1", 1): RULES.usage.credits_per_actor}, {})
    stepped, _ = _learn(selection, _outcome(selection, _call("a/mine", True), _call("a/mine", False)), used=used)
    (p,) = stepped.posteriors.values()
    assert (p.alpha, p.beta, p.successes, p.failures) == (1.0, 2.0, 0, 1)
    assert stepped.examples == []


def test_the_actor_is_the_session_else_the_user_else_the_selection() -> None:
    assert actor(_selection([], session="s", user="u")) == "session:s"
    assert actor(_selection([], session=None, user="u")) == "user:u"
    anonymous = _selection([], session=None)
    assert actor(anonymous) == f"selection:{anonymous['selection_id']}"


def test_shared_usage_is_kept_in_the_shared_scope() -> None:
    rules = OutcomeRules(1.0, 1.0, 0.0, 0.9, UsageRules("global", 64, 64.0, 3), 2, 8)
    selection = _selection(["a/mine"])
    selections = {selection["selection_id"]: selection}
    seen = observations([_outcome(selection, _call("a/mine", True))], selections, TOOLS, 0.0)
    stepped = step(seen, {seen[0].key: _prior()}, rules)
    assert [e.scope for e in stepped.examples] == ["*"]
    assert list(stepped.posteriors) == [(1, "acme", "free::general")]  # posteriors stay the tenant's


def test_a_tool_offered_for_a_part_of_a_compound_query_learns_that_part() -> None:
    selection = _selection(["a/mine", "s/shared"], needs=["book a table", None])
    selection["query"] = "book a table, then check the weather in Oslo"
    stepped, _ = _learn(selection, _outcome(selection, _call("a/mine", True), _call("s/shared", True)))
    assert {e.tool_id: e.query for e in stepped.examples} == {
        1: "book a table",
        2: "book a table, then check the weather in Oslo",  # only the whole query retrieved it
    }


def test_a_tool_not_offered_for_a_part_is_taught_the_whole_query() -> None:
    selection = _selection(["a/mine"])
    assert taught_with(selection, "a/mine") == "weather in Oslo"
    assert taught_with(selection, "x/not-offered") == "weather in Oslo"


def _failing(selection: Selection, n: int) -> list[OutcomeEvent]:
    calls = [ToolCall(plugin_id="a", name="mine", success=False), ToolCall(plugin_id="a", name="mine", success=True)]
    return [OutcomeEvent(selection_id=selection["selection_id"], calls=calls) for _ in range(n)]


def test_one_actors_successful_and_failed_calls_each_count_a_bounded_number_of_times() -> None:
    selection = _selection(["a/mine"], session="s1")
    selections = {selection["selection_id"]: selection}
    ids = {key: t.id for key, t in TOOLS.items()}
    batch = _failing(selection, 5)
    assert credit_keys(batch, selections, ids, False, 0.0) == [("acme", "session:s1", 1)] * 5
    assert credit_keys(batch, selections, ids, True, 0.0) == [("acme", "session:s1", 1)] * 5
    used = Credits({}, {("acme", "session:s1", 1): 1})
    counted, credits = capped_calls(batch, selections, ids, used, UsageRules("tenant", 64, 64.0, 3))
    assert [sum(not c.success for c in e.calls) for e in counted] == [1, 1, 0, 0, 0]
    assert [sum(c.success for c in e.calls) for e in counted] == [1, 1, 1, 0, 0]
    assert credits == Credits({("acme", "session:s1", 1): 3}, {("acme", "session:s1", 1): 3})


def test_another_actors_calls_have_their_own_bound() -> None:
    first, second = _selection(["a/mine"], session=None), _selection(["a/mine"], session=None)
    selections = {s["selection_id"]: s for s in (first, second)}
    ids = {key: t.id for key, t in TOOLS.items()}
    two = UsageRules("tenant", 64, 64.0, 2)
    counted, _ = capped_calls([*_failing(first, 4), *_failing(second, 4)], selections, ids, Credits({}, {}), two)
    assert [sum(not c.success for c in e.calls) for e in counted] == [1, 1, 0, 0, 1, 1, 0, 0]
    assert [sum(c.success for c in e.calls) for e in counted] == [1, 1, 0, 0, 1, 1, 0, 0]


def test_one_actors_successes_rated_zero_cannot_drive_a_tools_health() -> None:
    """A success rated 0 scores as a failure in the rolling score: 200 of them in one outcome took a tool through
    warning and degraded to quarantine for the whole tenant, past the bound on failures."""
    selection = _selection(["a/mine"], session="s1")
    selections = {selection["selection_id"]: selection}
    ids = {key: t.id for key, t in TOOLS.items()}
    zero = ToolCall(plugin_id="a", name="mine", success=True, rating=0.0)
    spam = [OutcomeEvent(selection_id=selection["selection_id"], calls=[zero] * 200)]
    counted, _ = capped_calls(spam, selections, ids, Credits({}, {}), RULES.usage)
    ((_, calls),) = call_counters(counted, selections, ids).items()
    assert (calls.calls, calls.rating_count) == (RULES.usage.credits_per_actor, RULES.usage.credits_per_actor)


def test_an_outcome_dated_ahead_is_taken_as_happening_now() -> None:
    """A success dated years ahead would hold its tool's recency at the top until then."""
    now = datetime(2026, 11, 28, tzinfo=UTC)
    past, ahead = (OutcomeEvent(selection_id=uuid4(), occurred_at=now + timedelta(days=d)) for d in (-1, 365 * 900))
    kept = not_after([past, ahead], now)
    assert [e.occurred_at for e in kept] == [now - timedelta(days=1), now]
    assert [e.event_id for e in kept] == [past.event_id, ahead.event_id]


def test_an_actors_credits_refill_with_each_window_of_its_selections() -> None:
    """A user asking without a session is one actor for good: its first three lessons of a tool were all it ever
    taught, its later successes and breakages counting nowhere."""
    day = UsageRules("tenant", 64, 64.0, 1, credits_window_s=86400.0)
    monday, tuesday = (_selection(["a/mine"], session=None, user="u") for _ in range(2))
    monday["asked_at"] = datetime(2026, 11, 23, 9, tzinfo=UTC)
    tuesday["asked_at"] = datetime(2026, 11, 24, 9, tzinfo=UTC)
    assert actor(monday, 86400.0) != actor(tuesday, 86400.0)
    assert actor(monday) == actor(tuesday) == "user:u"  # no window: one actor for good
    selections = {s["selection_id"]: s for s in (monday, tuesday)}
    ids = {key: t.id for key, t in TOOLS.items()}
    batch = [*_failing(monday, 2), *_failing(tuesday, 2)]
    counted, credits = capped_calls(batch, selections, ids, Credits({}, {}), day)
    assert [len(e.calls) for e in counted] == [2, 0, 2, 0]  # one success and one failure a day
    assert len(credits.successes) == len(credits.failures) == 2
    anonymous = _selection(["a/mine"], session=None)
    assert actor(anonymous, 86400.0) == f"selection:{anonymous['selection_id']}"


def test_only_the_events_the_store_took_as_new_are_applied() -> None:
    batch = [OutcomeEvent(selection_id=uuid4()) for _ in range(3)]
    fresh, repeated = split_inserted(batch, {batch[2].event_id, batch[0].event_id})
    assert (fresh, repeated) == ([batch[0], batch[2]], [batch[1]])


def test_a_sender_stores_at_most_the_bound_of_outcomes_about_one_selection_and_a_stored_copy_is_kept() -> None:
    """The bound counts what is stored and what the batch adds before, per (selection, sender); a copy of a stored
    outcome is kept, to be recognised as a duplicate, never refused."""
    agent, other = tenant_scope("acme", "agent"), tenant_scope("acme", "other")
    mine, theirs = _selection(["a/mine"]), _selection(["a/mine"])
    stored = _outcome(mine).sent_by(agent)
    rows = [(stored.event_id, mine["selection_id"], agent.token), (uuid4(), mine["selection_id"], None)]
    second, third = _outcome(mine).sent_by(agent), _outcome(mine).sent_by(agent)
    operators = _outcome(mine).sent_by(OPERATOR)
    elsewhere = [_outcome(theirs).sent_by(other) for _ in range(2)]
    kept, over = within([stored, second, third, operators, *elsewhere], rows, 2)
    assert kept == [stored, second, operators, *elsewhere]  # a row stored before senders counts for none
    assert over == [third]
    assert within([stored], rows, 1) == ([stored], [])


def test_a_stored_error_is_cut_and_the_rest_of_the_call_kept() -> None:
    selection = _selection(["a/mine"])
    long = ToolCall(plugin_id="a", name="mine", success=False, error="e" * 2000)
    short = ToolCall(plugin_id="a", name="mine", success=False, error="timeout")
    event = _outcome(selection, long, short, _call("a/mine", True)).sent_by(tenant_scope("acme", "agent"))
    (cut,) = cut_errors([event], 8)
    assert [c.error for c in cut.calls] == ["e" * 8, "timeout", None]
    assert (cut.event_id, cut.sender, [c.success for c in cut.calls]) == (event.event_id, event.sender, [0, 0, 1])
    assert cut_errors([event], 2000) == [event]
