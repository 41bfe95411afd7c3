"""MCP sessions: bounded by count, idle time, answers kept and across identities (the identity holding the most
loses one first); rejections and earlier pages are excluded from later answers; a session's bytes stay within what
the settings say."""

import tracemalloc
from uuid import uuid4

import pytest

from toolsel.contracts import ToolRef
from toolsel.mcp.sessions import MAX_EXCLUDE, SessionPool, Sessions, UnknownSession


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


def test_a_session_that_keeps_one_answer_keeps_one() -> None:
    session = Sessions(max_sessions=10, ttl_s=60, max_offers=1).open()
    for page in range(1, 4):
        session.record(uuid4(), "q", page, refs(f"t{page}"))
    assert [o.page for o in session.offers] == [3]


def test_a_tool_of_a_forgotten_answer_is_no_longer_known_by_its_name() -> None:
    session = Sessions(max_sessions=10, ttl_s=60, max_offers=2).open()
    first = uuid4()
    session.record(first, "q", 1, refs("a", "b"))
    session.record(uuid4(), "r", 1, refs("c"))
    assert session.resolve("p__a") == refs("a")[0]
    assert session.selection_of(refs("a")[0]) == first
    session.record(uuid4(), "s", 1, refs("b"))
    assert session.resolve("p__a") is None
    assert session.resolve("p/a") is None
    assert session.resolve("p__b") == refs("b")[0]


def test_rejections_past_what_a_request_may_exclude_are_not_kept() -> None:
    """Only the first ``MAX_EXCLUDE`` rejections were ever sent; the rest grew the session for nothing."""
    session = Sessions(max_sessions=10, ttl_s=60).open()
    rejected = refs(*(f"r{i}" for i in range(MAX_EXCLUDE + 50)))
    session.reject(rejected[:10])
    session.reject(rejected)
    assert len(session.rejected) == MAX_EXCLUDE
    assert session.exclude_for("q", 1) == rejected[:MAX_EXCLUDE]


FULL_SESSION_BYTES = 20_000
"""A full session at the defaults (``mcp_session_offers`` answers of 20 tools, for 2,000-character queries), with
room over the 13 kB measured (the settings' docstrings): before, 1.45 MB (100 answers of 20 ``ToolRef``s and their
queries)."""


def test_a_full_session_at_the_defaults_stays_within_its_measured_bytes() -> None:
    catalog = [ToolRef(plugin_id=f"plugin-{i % 7}", name=f"tool_{i}") for i in range(100)]
    sessions = Sessions(max_sessions=100, ttl_s=60)

    def fill(count: int) -> None:
        for _ in range(count):
            session = sessions.open()
            for answer in range(100):
                query = f"{answer} " + "x" * 1995
                session.record(uuid4(), query, 1, catalog[(answer % 5) * 20 : (answer % 5) * 20 + 20])

    tracemalloc.start()
    try:
        fill(30)  # the catalog's names and the interpreter's free lists (2,000 tuples a size), once for all
        before = tracemalloc.get_traced_memory()[0]
        fill(5)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown / 5 < FULL_SESSION_BYTES


def test_sessions_of_all_identities_are_bounded_together_and_a_flood_ends_its_own() -> None:
    pool = SessionPool(5)
    flood, quiet = Sessions(100, 60, pool=pool), Sessions(100, 60, pool=pool)
    kept = [quiet.open(), quiet.open()]
    opened = []
    for _ in range(20):
        opened.append(flood.open())
        assert len(pool) <= 5
    assert [quiet.find(s.id) for s in kept] == kept
    assert [s.id for s in opened if flood.find(s.id) is not None] == [s.id for s in opened[-3:]]


def test_idle_sessions_end_before_a_busy_identity_loses_one() -> None:
    clock = Clock()
    pool = SessionPool(3)
    busy, idle = Sessions(100, 60, clock=clock, pool=pool), Sessions(100, 60, clock=clock, pool=pool)
    gone = idle.open()
    clock.now = 30
    first = busy.open()
    clock.now = 70  # the idle identity's session is past its TTL, nobody asked for it since
    second, third = busy.open(), busy.open()
    assert len(pool) == 3
    assert [busy.find(s.id) for s in (first, second, third)] == [first, second, third]
    assert idle.find(gone.id) is None
