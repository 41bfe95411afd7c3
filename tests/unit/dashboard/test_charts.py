"""The dashboard's server-side charts: axes span the data they show."""

import re
from datetime import date

from toolsel.dashboard import charts


def _labels(svg: str) -> list[str]:
    return re.findall(r'text-anchor="middle">(\d\d-\d\d)</text>', svg)


def test_one_day_of_accuracy_is_drawn_on_a_three_day_axis_around_it_not_over_years() -> None:
    svg = str(charts.daily_share([(date(2026, 11, 27), 0.75)], "accuracy"))
    assert _labels(svg) == ["11-26", "11-27", "11-28"]
    assert "75%" in svg
    assert ">100%<" in svg
    assert ">0%<" in svg
    assert len(re.findall(r"<circle ", svg)) == 1


def test_a_long_span_gets_at_most_about_eight_date_ticks() -> None:
    points = [(date(2026, 1, 1).fromordinal(date(2026, 1, 1).toordinal() + n), 0.5) for n in range(60)]
    labels = _labels(str(charts.daily_share(points, "accuracy")))
    assert labels[0] == "01-01"
    assert 8 <= len(labels) <= 9


def test_bars_scale_to_the_largest_value_and_escape_names() -> None:
    svg = str(charts.bars([("hybrid", 10), ("<vector>", 5)], "methods"))
    widths = [float(w) for w in re.findall(r'<rect x="180" y="[\d.]+" width="([\d.]+)"', svg)]
    assert widths == [charts.WIDTH - 260, (charts.WIDTH - 260) / 2]
    assert "&lt;vector&gt;" in svg
    assert "<vector>" not in svg


def test_a_spiking_day_is_outlined_and_stacks_sum_its_verdicts() -> None:
    days = [(date(2026, 11, 1), {"perfect": 2}, False), (date(2026, 11, 2), {"perfect": 1, "broken": 4}, True)]
    svg = str(charts.stacked_days(days, "verdicts"))
    assert svg.count('class="spike"') == 1
    assert "2026-11-02 broken: 4" in svg


def test_empty_charts_say_so() -> None:
    assert "nothing yet" in charts.bars([], "methods")
    assert "nothing yet" in charts.daily_share([], "accuracy")
