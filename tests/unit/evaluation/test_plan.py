"""The online scenarios' planning and measures: which tool, which events, time to leave or reach the top, and
whether a tenant's answers moved."""

import pytest

from toolsel.evaluation.dataset import Query, Tool
from toolsel.evaluation.plan import (
    ALTERNATIVE_PREFIX,
    Event,
    Sighting,
    alternative_tool,
    check_window,
    default_at,
    drift_events,
    events_of,
    events_until_gone,
    events_until_offered,
    frequent_tools,
    new_tool_events,
    offered_share,
    pick_tool,
    queries_of,
    ranking_changes,
    recovery_at,
    track,
)
from toolsel.evaluation.run import services_settings


def q(id_: str, *relevant: str) -> Query:
    return Query(id_, f"query {id_}", frozenset(relevant))


STREAM = [q("1", "a"), q("2", "b"), q("3", "a", "c"), q("1", "a"), q("4", "c"), q("5", "b"), q("6", "d")]


def test_frequent_tools_count_streamed_events_and_break_ties_by_name() -> None:
    assert frequent_tools(STREAM, 3) == ["a", "b", "c"]
    assert frequent_tools([], 3) == []


def test_queries_of_a_tool_are_distinct_in_first_seen_order() -> None:
    assert [x.id for x in queries_of(STREAM, "a")] == ["1", "3"]


def test_the_pick_is_seeded_among_tools_offered_often_enough() -> None:
    shares = {"a": 0.9, "b": 0.1, "c": 0.6}
    picks = {pick_tool(["a", "b", "c"], shares, seed) for seed in range(40)}
    assert picks == {"a", "c"}
    assert pick_tool(["a", "b", "c"], shares, 7) == pick_tool(["a", "b", "c"], shares, 7)
    assert pick_tool(["a", "b"], {"a": 0.2, "b": 0.3}, 0) == "b"  # none offered enough: the most offered
    with pytest.raises(ValueError, match="no relevant tools"):
        pick_tool([], {}, 0)


def test_recovery_comes_after_the_tools_own_failing_events_when_the_stream_holds_them() -> None:
    # STREAM: "a" is relevant at events 0, 2 and 3
    assert recovery_at(STREAM, "a", 1, 2, fallback=5) == 4  # its 2nd event from 1 is event 3: recovers at 4
    assert recovery_at(STREAM, "a", 0, 1, fallback=5) == 1
    assert recovery_at(STREAM, "a", 1, 3, fallback=5) == 5  # only two of its events left: the fallback
    assert recovery_at(STREAM, "d", 0, 1, fallback=5) == 5  # its event is the last: nothing after, the fallback


def test_change_events_default_to_fractions_and_must_leave_a_before_and_after() -> None:
    assert default_at(600, 1 / 3, None) == 200
    assert default_at(600, 2 / 3, None) == 400
    assert default_at(600, 1 / 3, 50) == 50
    check_window(600, 200, 400)
    check_window(600, 200)
    for start, end in ((0, 400), (400, 400), (200, 601)):
        with pytest.raises(ValueError, match="need 0 < change"):
            check_window(600, start, end)
    with pytest.raises(ValueError, match="need 0 < change"):
        check_window(10, 10)


def test_the_drifting_tool_fails_only_inside_its_window() -> None:
    events = drift_events(STREAM, "a", 2, 4)
    assert [sorted(e.failing) for e in events] == [[], [], ["a"], ["a"], [], [], []]
    assert [e.query for e in events] == STREAM


def test_the_new_tool_replaces_the_original_from_its_event_on() -> None:
    events = new_tool_events(STREAM, "a", "a2", 2)
    assert events[0].query.relevant == {"a"}  # before: unchanged
    assert events[2].query.relevant == {"a2", "c"}
    assert events[3].query.relevant == {"a2"}
    assert events[4].query == STREAM[4]  # not one of its queries


def test_the_alternative_has_a_new_name_and_the_prefixed_description() -> None:
    original = Tool("search", "Search the web.", {"type": "object"})
    copy = alternative_tool(original, {"search", "search alternative"})
    assert copy.name == "search alternative 2"
    assert copy.description == ALTERNATIVE_PREFIX + "Search the web."
    assert copy.parameters == original.parameters


def test_track_follows_the_tool_over_its_events_in_the_window() -> None:
    events = [Event(x) for x in STREAM]
    offered = [["a", "b"], ["b"], ["c", "x", "a"], ["x"], ["c"], ["b"], ["d"]]
    assert track(events, offered, "a", 0, 7) == [Sighting(0, 1), Sighting(2, 3), Sighting(3, None)]
    assert track(events, offered, "a", 1, 3) == [Sighting(2, 3)]
    assert track(events, offered, "a", 5, 99) == []


def test_events_until_offered_anywhere_or_in_the_top() -> None:
    sightings = [Sighting(10, 5), Sighting(12, None), Sighting(15, 1)]
    assert events_until_offered(sightings) == 1
    assert events_until_offered(sightings, 3) == 3
    assert events_until_offered(sightings[:2], 3) is None
    assert events_until_offered([]) is None


def test_a_tool_is_gone_from_the_event_after_which_it_is_only_retried_now_and_then() -> None:
    assert events_until_gone([Sighting(1, 1), Sighting(2, None), Sighting(3, 4), Sighting(4, None)]) == 4
    assert events_until_gone([Sighting(1, None), Sighting(2, None)]) == 1
    assert events_until_gone([Sighting(1, None), Sighting(2, 3)]) is None  # still offered at its last event
    assert events_until_gone([]) is None
    retried = [Sighting(1, 1), Sighting(2, 2)] + [Sighting(i, 5 if i == 8 else None) for i in range(3, 13)]
    assert events_until_gone(retried) == 3  # one retry in its last 10 events: gone from the 3rd
    assert events_until_gone(retried, retry_share=0.0) == 9  # strict: after its last offer (event 8)


def test_track_gives_the_rank_at_each_event_of_its_queries() -> None:
    events = [Event(x) for x in STREAM]
    offered = [["a"], [], ["c"], ["a"], [], [], []]
    assert track(events, offered, "a", 0, 2) == [Sighting(0, 1)]
    assert track(events, offered, "a", 2, 7) == [Sighting(2, None), Sighting(3, 1)]


def test_events_of_lists_the_tools_events_in_the_window() -> None:
    events = [Event(x) for x in STREAM]
    offered = [["a"], [], ["c"], ["a"], [], [], []]
    assert events_of(events, "a", 0, 7) == [s.event for s in track(events, offered, "a", 0, 7)]
    assert events_of(events, "a", 1, 3) == [2]
    assert events_of(events, "a", 5, 99) == []


def test_offered_share() -> None:
    assert offered_share([Sighting(1, 1), Sighting(2, None)]) == 0.5
    assert offered_share([]) is None


def test_ranking_changes_need_the_same_tools_in_the_same_order() -> None:
    before = [["a", "b"], ["c"], ["d", "e"]]
    assert ranking_changes(["1", "2", "3"], before, [["a", "b"], ["c"], ["d", "e"]]) == []
    assert ranking_changes(["1", "2", "3"], before, [["b", "a"], ["c"], ["d"]]) == ["1", "3"]
    with pytest.raises(ValueError, match="longer"):
        ranking_changes(["1"], before, before)


def test_the_services_settings_reported_are_those_of_the_stack_the_eval_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """They were read from the eval's own environment, without what it sets for the services it starts."""
    monkeypatch.setenv("TOOLSEL_QUERY_CACHE_SIZE", "7")
    monkeypatch.setenv("TOOLSEL_DEFAULT_K", "3")
    reported = services_settings({"TOOLSEL_THOMPSON_SAMPLING": "false", "TOOLSEL_QUERY_CACHE_SIZE": "100000"})
    assert (reported["thompson_sampling"], reported["query_cache_size"], reported["default_k"]) == (False, 100000, 3)
    assert services_settings({})["query_cache_size"] == 7
    assert "database_url" not in reported
