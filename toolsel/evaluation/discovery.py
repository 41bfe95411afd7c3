"""What a stream could teach: the usage memory learns from a query only when one of its relevant tools was offered,
so a relevant tool retrieval never offers is never learnt. These figures say how much of a stream taught and which
relevant tools it left undiscovered (exploration's work)."""

from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolsel.evaluation.plan import Event

LEAST_EVENTS = 5
"""A tool is listed among the least offered only with at least this many events of its queries."""
LISTED = 10
"""How many of the least offered tools are listed."""


def taught_share(events: Sequence[Event], offered: Sequence[Sequence[str]]) -> float | None:
    """The share of the events in which at least one of the query's relevant tools was offered (None: none)."""
    if not events:
        return None
    return sum(bool(e.query.relevant & set(o)) for e, o in zip(events, offered, strict=True)) / len(events)


def least_offered(
    events: Sequence[Event], offered: Sequence[Sequence[str]], least: int = LEAST_EVENTS, listed: int = LISTED
) -> list[dict[str, Any]]:
    """The tools most often relevant yet least often offered for their queries: the ``listed`` lowest shares
    among tools with at least ``least`` events, ties by more events first."""
    relevant: Counter[str] = Counter()
    shown: Counter[str] = Counter()
    for event, tools in zip(events, offered, strict=True):
        for name in event.query.relevant:
            relevant[name] += 1
            shown[name] += name in tools
    ranked = sorted((shown[n] / count, -count, n) for n, count in relevant.items() if count >= least)
    return [{"tool": n, "events": -neg, "offered_share": share} for share, neg, n in ranked[:listed]]


def discovery(events: Sequence[Event], offered: Sequence[Sequence[str]]) -> dict[str, Any]:
    """The stream's taught share, over all of it and its last quarter, and its least offered relevant tools."""
    last = len(events) - len(events) // 4
    return {
        "taught_share": taught_share(events, offered),
        "taught_share_last_quarter": taught_share(events[last:], offered[last:]),
        "least_offered": least_offered(events, offered),
    }
