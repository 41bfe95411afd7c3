"""What a stream could teach: the events with a relevant tool offered, and the tools it left undiscovered."""

import pytest

from toolsel.evaluation.dataset import Query
from toolsel.evaluation.discovery import discovery, least_offered, taught_share
from toolsel.evaluation.plan import Event
from toolsel.evaluation.report import discovery_lines


def event(*relevant: str) -> Event:
    return Event(Query("q", "query", frozenset(relevant)))


EVENTS = [event("a"), event("b"), event("a", "c"), event("c"), event("a"), event("b"), event("c"), event("b")]
OFFERED = [["a", "x"], ["x"], ["c"], ["x", "y"], ["x"], ["b"], ["c", "a"], ["b"]]


def test_an_event_teaches_when_any_of_its_relevant_tools_was_offered() -> None:
    assert taught_share(EVENTS, OFFERED) == pytest.approx(5 / 8)
    assert taught_share([], []) is None


def test_the_least_offered_tools_come_first_among_those_with_enough_events() -> None:
    listed = least_offered(EVENTS, OFFERED, least=3)
    assert listed == [
        {"tool": "a", "events": 3, "offered_share": pytest.approx(1 / 3)},
        {"tool": "b", "events": 3, "offered_share": pytest.approx(2 / 3)},
        {"tool": "c", "events": 3, "offered_share": pytest.approx(2 / 3)},
    ]
    assert least_offered(EVENTS, OFFERED, least=4) == []
    assert [t["tool"] for t in least_offered(EVENTS, OFFERED, least=1, listed=1)] == ["a"]


def test_the_last_quarter_shows_whether_the_stream_still_misses() -> None:
    found = discovery(EVENTS, OFFERED)
    assert found["taught_share"] == pytest.approx(5 / 8)
    assert found["taught_share_last_quarter"] == pytest.approx(1.0)  # events 6 and 7: c offered, b offered


def test_the_terminal_says_what_was_taught_and_what_was_missed() -> None:
    lines = discovery_lines(
        {
            "taught_share": 0.625,
            "taught_share_last_quarter": 1.0,
            "least_offered": [{"tool": "a", "events": 3, "offered_share": 1 / 3}],
        }
    )
    assert lines == [
        "taught: a relevant tool was offered in 62.5% of the events (100.0% in the last quarter)",
        "least offered for their own queries: a (33% of 3)",
    ]
    assert discovery_lines({"taught_share": None}) == []
