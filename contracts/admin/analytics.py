"""The analytics area of the admin API (the learner serves it): selection metrics over the event history."""

from datetime import date

from pydantic import Field

from toolsel.contracts.common import AdminRequest, Frozen, Identifier, Message


class AnalyticsQuery(AdminRequest):
    """A window of the event history: days from ``since`` to ``until``, both included (UTC), of one tenant's
    selections (and the outcomes and reviews of them) or, with no ``tenant_id``, of every tenant's. ``tools`` and
    ``pages`` bound a heatmap: the most selected tools, and the pages most selected with them (each tool's
    selections on the other pages summed in ``Heatmap.other_pages``)."""

    since: date | None = None
    until: date | None = None
    tenant_id: Identifier | None = None
    tools: int | None = Field(default=None, ge=1, le=10_000)
    pages: int | None = Field(default=None, ge=1, le=10_000)


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
HEATMAP_TOOLS_SHOWN = 20
"""Rows of the heatmap a person is shown (the dashboard's Analytics tab, ``toolsel report``): the most selected
tools."""
HEATMAP_PAGES_SHOWN = 12
"""Columns of that heatmap: the pages most selected with those tools, the rest summed in one column."""


class Heatmap(Message):
    """The most selected cells that fit one message (a page is the request's own words, up to 1 KiB each)."""

    cells: list[HeatCell] = Field(max_length=HEATMAP_CELLS_MAX)
    other_pages: dict[str, int] = Field(default_factory=dict)
    """Per tool within the query's ``tools`` limit: its selections on the pages past its ``pages`` limit."""
    left_out: int = 0
    """Cells of the window not in ``cells``: past the query's ``tools`` or ``pages`` limit (those of the kept tools
    summed in ``other_pages``), past ``HEATMAP_CELLS_MAX``, or past what one message carries (the least selected
    first)."""


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
