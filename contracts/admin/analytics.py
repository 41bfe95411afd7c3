"""The analytics area of the admin API (the learner serves it): selection metrics over the event history."""

from datetime import date

from pydantic import Field

from toolsel.contracts.common import AdminRequest, Frozen, Message


class AnalyticsQuery(AdminRequest):
    """A window of the event history: days from ``since`` to ``until``, both included (UTC)."""

    since: date | None = None
    until: date | None = None


class SelectionMetrics(Message):
    selections: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    methods: dict[str, int]
    outcomes: dict[str, int]
    """Selections by what followed: ``success``, ``failure`` (a call failed), ``not_called`` or ``no_outcome``."""
    average_tokens_saved: float | None


class HeatCell(Frozen):
    tool: str
    page: str
    count: int


HEATMAP_CELLS_MAX = 5000
"""Cells a heatmap reply carries at most, the most selected first: pages are the requests' own words, so a flood
of distinct ones would otherwise make the reply too large for one message."""


class Heatmap(Message):
    cells: list[HeatCell] = Field(max_length=HEATMAP_CELLS_MAX)
    left_out: int = 0
    """Cells past ``HEATMAP_CELLS_MAX``, the least selected, not in ``cells``."""


class AccuracyPoint(Frozen):
    day: date
    outcomes: int
    hits: int
    accuracy: float


class AccuracyTrend(Message):
    points: list[AccuracyPoint]


class VerdictDay(Frozen):
    """One UTC day of the review log: verdicts by kind, and whether its ``broken`` ones spiked."""

    day: date
    verdicts: dict[str, int]
    spike: bool


class TurnedTool(Frozen):
    """A tool whose reviews turned: the share of its ``perfect`` and ``related`` verdicts in the earlier half of
    its reviews in the window, and in the later half."""

    tool: str
    reviews: int
    good_before: float
    good_after: float


class ReviewTrend(Message):
    """The review log over a window: verdicts per day with spikes of ``broken`` flagged, and the tools whose
    verdicts turned (most turned first)."""

    days: list[VerdictDay]
    turned: list[TurnedTool]
