"""Small SVG charts drawn on the server (no script, nothing to build): bars, a daily line with a date axis that
spans the data it has (one day of data is one day, not years), stacked daily columns, and heatmap shades."""

from collections.abc import Sequence
from datetime import date, timedelta
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT, LEFT, RIGHT, BOTTOM, TOP = 640, 200, 44, 24, 28, 10
COLOURS = {"perfect": "#2e7d32", "related": "#8bc34a", "unrelated": "#ffb300", "broken": "#c62828"}


def _svg(body: str, label: str, height: int = HEIGHT) -> Markup:
    return Markup(
        f'<svg class="chart" role="img" aria-label="{escape(label)}" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}">{body}</svg>'
    )


def bars(items: Sequence[tuple[str, float]], label: str, unit: str = "") -> Markup:
    """Horizontal bars, one per (name, value), scaled to the largest."""
    if not items:
        return Markup('<p class="empty">nothing yet</p>')
    row, top = 24, max(value for _, value in items) or 1.0
    parts = []
    for i, (name, value) in enumerate(items):
        y, w = i * row + 4, (WIDTH - 260) * value / top
        parts.append(
            f'<text x="0" y="{y + 14}" class="axis">{escape(name)}</text>'
            f'<rect x="180" y="{y}" width="{w:.1f}" height="{row - 8}" class="bar"/>'
            f'<text x="{184 + w:.1f}" y="{y + 14}" class="value">{value:,.4g}{escape(unit)}</text>'
        )
    return _svg("".join(parts), label, row * len(items) + 8)


def _days(first: date, last: date) -> list[date]:
    """The axis's days: the data's span, widened to three days when shorter so a lone point sits mid-axis."""
    if (last - first).days < 2:
        first, last = first - timedelta(days=1), last + timedelta(days=1)
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _x(day: date, days: list[date]) -> float:
    span = max(len(days) - 1, 1)
    return LEFT + (WIDTH - LEFT - RIGHT) * (day - days[0]).days / span


def _date_axis(days: list[date]) -> str:
    """Ticks on at most eight evenly spaced days, labelled month-day."""
    step = max(1, len(days) // 8)
    base = HEIGHT - BOTTOM
    ticks = [
        f'<line x1="{_x(d, days):.1f}" y1="{base}" x2="{_x(d, days):.1f}" y2="{base + 4}" class="tick"/>'
        f'<text x="{_x(d, days):.1f}" y="{base + 18}" class="axis" text-anchor="middle">{d:%m-%d}</text>'
        for d in days[::step]
    ]
    return f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" class="tick"/>' + "".join(ticks)


def _y(value: float, top: float) -> float:
    return TOP + (HEIGHT - BOTTOM - TOP) * (1 - value / top)


def _value_axis(top: float, percent: bool) -> str:
    marks = [top * n / 4 for n in range(5)]
    return "".join(
        f'<line x1="{LEFT}" y1="{_y(v, top):.1f}" x2="{WIDTH - RIGHT}" y2="{_y(v, top):.1f}" class="grid"/>'
        f'<text x="{LEFT - 6}" y="{_y(v, top) + 4:.1f}" class="axis" text-anchor="end">'
        f"{f'{v:.0%}' if percent else f'{v:,.0f}'}</text>"
        for v in marks
    )


def daily_share(points: Sequence[tuple[date, float]], label: str) -> Markup:
    """A share (0..1) per day as a line with dots: the x axis spans the data's days, the y axis 0–100 %."""
    if not points:
        return Markup('<p class="empty">nothing yet</p>')
    days = _days(points[0][0], points[-1][0])
    xy = [(_x(d, days), _y(v, 1.0)) for d, v in points]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" class="dot"><title>{d}: {v:.0%}</title></circle>'
        for (x, y), (d, v) in zip(xy, points, strict=True)
    )
    body = _value_axis(1.0, True) + _date_axis(days) + f'<polyline points="{line}" class="line"/>' + dots
    return _svg(body, label)


def stacked_days(days: Sequence[tuple[date, dict[str, int], bool]], label: str) -> Markup:
    """Columns per day stacked by verdict; a spiking day is outlined and marked."""
    if not days:
        return Markup('<p class="empty">no reviews yet</p>')
    axis = _days(days[0][0], days[-1][0])
    top = max(max(sum(counts.values()) for _, counts, _ in days), 1)
    width = max(4.0, (WIDTH - LEFT - RIGHT) / len(axis) * 0.6)
    parts = [_value_axis(float(top), False), _date_axis(axis)]
    for day, counts, spike in days:
        x, below = _x(day, axis) - width / 2, 0
        for kind, colour in COLOURS.items():
            n = counts.get(kind, 0)
            if n:
                y0, y1 = _y(below + n, top), _y(below, top)
                parts.append(
                    f'<rect x="{x:.1f}" y="{y0:.1f}" width="{width:.1f}" height="{y1 - y0:.1f}" fill="{colour}">'
                    f"<title>{day} {kind}: {n}</title></rect>"
                )
                below += n
        if spike:
            parts.append(
                f'<rect x="{x - 2:.1f}" y="{_y(below, top) - 2:.1f}" width="{width + 4:.1f}" '
                f'height="{_y(0, top) - _y(below, top) + 2:.1f}" class="spike"/>'
                f'<text x="{x + width / 2:.1f}" y="{_y(below, top) - 6:.1f}" class="spike-label" '
                f'text-anchor="middle">spike</text>'
            )
    return _svg("".join(parts), label)


def shade(count: int, top: int) -> str:
    """A heatmap cell's background: blue, its strength the count's share of the largest."""
    return f"rgba(21, 101, 192, {0.08 + 0.82 * count / max(top, 1):.2f})"
