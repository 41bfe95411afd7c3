"""The online scenarios' planning and their measures (pure functions): which tool drifts or is copied, at which
events, how long a tool took to leave or reach the top of what was offered, and whether a tenant's answers moved."""

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from toolsel.evaluation.dataset import Query, Tool

Scenario = Literal["stream", "drift", "new-tool", "tenants", "tune"]
CANDIDATES = 5
"""The most frequently relevant tools of the stream among which the seed picks the drifting or copied tool."""
OFFERED_SHARE = 0.5
"""A candidate must be offered for at least this share of its queries before the change: a tool the selector
never offers can neither leave nor be replaced."""
RETRY_SHARE = 0.1
"""A failing tool has left the top K once it is offered in at most this share of its later events: a tool must be
retried now and then (on probation after quarantine, or in the exploration slot) to be seen to recover."""
NEW_TOOL_TOP = 3
"""The new tool's target: reach this rank among the tools offered for its queries."""
ALTERNATIVE_PREFIX = "Alternative: "
"""The new tool's description: its original's, with this prefix (the name differs too)."""


@dataclass(frozen=True)
class Event:
    """One streamed event: the query as the simulated agent judges it at that moment."""

    query: Query
    failing: frozenset[str] = frozenset()
    """The set's names of tools whose calls fail at this event (and which the agent reviews as broken)."""


def default_at(events: int, fraction: float, given: int | None) -> int:
    """The event index of a change: ``given``, else ``fraction`` of the stream."""
    return int(events * fraction) if given is None else given


def check_window(events: int, start: int, end: int | None = None) -> None:
    """0 < start (< end) ≤ events, so there is a before, a during (and an after)."""
    last = events if end is None else end
    if not 0 < start < last <= events:
        raise ValueError(f"need 0 < change ({start}){'' if end is None else f' < recovery ({end})'} ≤ {events} events")


def recovery_at(queries: Sequence[Query], tool: str, start: int, failing_events: int, fallback: int) -> int:
    """Where a drifting tool recovers by default: right after ``failing_events`` of its queries have been streamed
    from ``start`` (so "leaves the top K within N of its events" can be seen however rare the tool is), when the
    stream holds that many and leaves events after them; else ``fallback``."""
    seen = 0
    for i in range(start, len(queries)):
        seen += tool in queries[i].relevant
        if seen == failing_events:
            return i + 1 if i + 1 < len(queries) else fallback
    return fallback


def frequent_tools(queries: Sequence[Query], top: int = CANDIDATES) -> list[str]:
    """The ``top`` tools relevant to the most streamed queries (ties by name)."""
    counts = Counter(name for q in queries for name in q.relevant)
    return sorted(counts, key=lambda name: (-counts[name], name))[:top]


def queries_of(queries: Sequence[Query], tool: str) -> list[Query]:
    """The distinct queries (by id, first-seen order) for which ``tool`` is relevant."""
    seen: dict[str, Query] = {}
    for q in queries:
        if tool in q.relevant:
            seen.setdefault(q.id, q)
    return list(seen.values())


def pick_tool(candidates: Sequence[str], offered_share: Mapping[str, float], seed: int) -> str:
    """The seed's choice among the candidates offered often enough (else the most offered one)."""
    if not candidates:
        raise ValueError("the stream has no relevant tools to pick from")
    eligible = [c for c in candidates if offered_share.get(c, 0.0) >= OFFERED_SHARE]
    if not eligible:
        return max(candidates, key=lambda c: offered_share.get(c, 0.0))
    return random.Random(seed).choice(eligible)


def drift_events(queries: Sequence[Query], tool: str, start: int, end: int) -> list[Event]:
    """The stream, with calls to ``tool`` failing from event ``start`` until event ``end``."""
    return [Event(q, frozenset({tool}) if start <= i < end else frozenset()) for i, q in enumerate(queries)]


def alternative_tool(original: Tool, taken: set[str]) -> Tool:
    """A copy of ``original`` under a new name, with its description prefixed as an alternative."""
    name, n = f"{original.name} alternative", 1
    while name in taken:
        n += 1
        name = f"{original.name} alternative {n}"
    return Tool(name, ALTERNATIVE_PREFIX + original.description, original.parameters)


def new_tool_events(queries: Sequence[Query], original: str, new: str, start: int) -> list[Event]:
    """The stream; from event ``start`` the new tool REPLACES the original in the relevant set of its queries."""
    return [
        Event(replace(q, relevant=(q.relevant - {original}) | {new}) if i >= start and original in q.relevant else q)
        for i, q in enumerate(queries)
    ]


@dataclass(frozen=True)
class Sighting:
    """One event of a tracked tool's queries: where it was offered (1-based rank, None when not offered)."""

    event: int
    rank: int | None


def events_of(events: Sequence[Event], tool: str, start: int, end: int) -> list[int]:
    """The indexes ``start ≤ i < end`` of the events whose query ``tool`` is relevant to."""
    return [i for i in range(start, min(end, len(events))) if tool in events[i].query.relevant]


def track(
    events: Sequence[Event],
    offered: Sequence[Sequence[str]],
    tool: str,
    start: int,
    end: int,
) -> list[Sighting]:
    """The tracked tool's rank in each event ``start ≤ i < end`` of a query it is relevant to."""
    return [
        Sighting(i, offered[i].index(tool) + 1 if tool in offered[i] else None)
        for i in events_of(events, tool, start, end)
    ]


def events_until_gone(sightings: Sequence[Sighting], retry_share: float = RETRY_SHARE) -> int | None:
    """How many of the tool's events until (and including) the first one from which it was offered in at most
    ``retry_share`` of its remaining events (the odd retry of a quarantined tool on probation, or of the
    exploration slot, does not keep it in the top K); None when that never happened (or it had no events)."""
    for n in range(1, len(sightings) + 1):
        rest = sightings[n - 1 :]
        if sum(s.rank is not None for s in rest) <= retry_share * len(rest):
            return n
    return None


def events_until_offered(sightings: Sequence[Sighting], within: int | None = None) -> int | None:
    """How many of the tool's events until (and including) the first one where it was offered within the top
    ``within`` (None: anywhere offered); None when that never happened."""
    return next(
        (n for n, s in enumerate(sightings, 1) if s.rank is not None and (within is None or s.rank <= within)), None
    )


def offered_share(sightings: Sequence[Sighting]) -> float | None:
    """The share of the tool's events in which it was offered (None without events)."""
    return sum(s.rank is not None for s in sightings) / len(sightings) if sightings else None


def ranking_changes(ids: Sequence[str], before: Sequence[Sequence[str]], after: Sequence[Sequence[str]]) -> list[str]:
    """The ids of the queries whose answer (the same tools in the same order) changed."""
    return [i for i, b, a in zip(ids, before, after, strict=True) if list(b) != list(a)]
