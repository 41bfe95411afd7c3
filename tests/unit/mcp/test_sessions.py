"""MCP sessions: bounded by count and idle time; rejections and earlier pages are excluded from later answers."""

from uuid import uuid4

import pytest

from toolsel.contracts import ToolRef
from toolsel.mcp.sessions import MAX_EXCLUDE, Sessions, UnknownSession


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def refs(*names: str) -> list[ToolRef]:
    return [ToolRef(plugin_id="p", name=n) for n in names]


def test_a_new_session_each_time_unless_a_live_id_comes_back() -> None:
    clock = Clock()
    sessions = Sessions(max_sessions=10, ttl_s=60, clock=clock)
    first = sessions.open()
    assert sessions.open(first.id) is first
    assert sessions.open().id != first.id
    with pytest.raises(UnknownSession, match="unknown or expired: call search_tools without a session"):
        sessions.open("unknown")
    clock.now += 61
    with pytest.raises(UnknownSession):
        sessions.open(first.id)


def test_least_recently_used_sessions_go_first() -> None:
    clock = Clock()
    sessions = Sessions(max_sessions=2, ttl_s=60, clock=clock)
    a, b = sessions.open(), sessions.open()
    assert sessions.find(a.id) is a  # a is now the most recent
    sessions.open()
    assert sessions.find(b.id) is None
    assert sessions.find(a.id) is a
    assert len(sessions) == 2


def test_idle_sessions_expire() -> None:
    clock = Clock()
    sessions = Sessions(max_sessions=10, ttl_s=60, clock=clock)
    kept, idle = sessions.open(), sessions.open()
    clock.now = 50
    sessions.find(kept.id)
    clock.now = 100
    assert sessions.find(idle.id) is None
    assert sessions.find(kept.id) is kept


def test_rejected_tools_are_always_excluded_and_pages_exclude_earlier_pages() -> None:
    session = Sessions(max_sessions=10, ttl_s=60).open()
    session.record(uuid4(), "Send an  email", 1, refs("a", "b"))
    session.record(uuid4(), "send an email", 2, refs("c"))
    session.record(uuid4(), "book a flight", 1, refs("f"))
    session.reject(refs("z"))
    assert session.exclude_for("send an email", 1) == refs("z")
    assert session.exclude_for("send an email", 2) == refs("z", "a", "b")
    assert session.exclude_for("SEND AN EMAIL", 3) == refs("z", "c", "a", "b")


def test_asking_a_page_again_replaces_its_offer() -> None:
    session = Sessions(max_sessions=10, ttl_s=60).open()
    session.record(uuid4(), "q", 1, refs("a"))
    again = session.record(uuid4(), "q", 1, refs("b"))
    assert session.offers == [again]
    assert session.exclude_for("q", 2) == refs("b")


def test_reviews_resolve_to_the_latest_selection_that_offered_the_tool() -> None:
    session = Sessions(max_sessions=10, ttl_s=60).open()
    old, new = uuid4(), uuid4()
    session.record(old, "q", 1, refs("a", "b"))
    session.record(new, "r", 1, refs("b"))
    (a, b) = refs("a", "b")
    assert session.resolve("p__a") == a
    assert session.resolve("p/b") == b
    assert session.resolve("p__nope") is None
    assert session.selection_of(a) == old
    assert session.selection_of(b) == new


def test_exclusions_stay_within_what_a_request_may_carry() -> None:
    session = Sessions(max_sessions=10, ttl_s=60).open()
    session.reject(refs(*(f"r{i}" for i in range(MAX_EXCLUDE + 50))))
    assert len(session.exclude_for("q", 5)) == MAX_EXCLUDE


def test_offers_are_bounded() -> None:
    session = Sessions(max_sessions=10, ttl_s=60, max_offers=3).open()
    for page in range(1, 10):
        session.record(uuid4(), "q", page, refs(f"t{page}"))
    assert [o.page for o in session.offers] == [7, 8, 9]
