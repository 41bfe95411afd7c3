"""Percentiles, rates and the selector's resident memory as the benchmark reports them."""

import pytest

from toolsel.bench.report import cells
from toolsel.bench.stats import percentiles_ms, rate, rss_mb


def test_percentiles_in_milliseconds() -> None:
    result = percentiles_ms([0.001 * i for i in range(1, 101)])
    assert result["p50"] == pytest.approx(50.5)
    assert result["p99"] == pytest.approx(99.01)


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError, match="no samples"):
        percentiles_ms([])


def test_rate_per_second_and_zero_without_time() -> None:
    assert rate(420, 2.0) == 210.0
    assert rate(5, 0.0) == 0.0


def test_rss_from_proc_status() -> None:
    assert rss_mb("Name:\tpython\nVmRSS:\t  204800 kB\nVmSwap: 0 kB\n") == 200.0
    with pytest.raises(ValueError, match="VmRSS"):
        rss_mb("Name: python\n")


def test_a_row_puts_the_uncached_percentiles_in_one_cell() -> None:
    size = {
        "tools": 200,
        "select_uncached_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0},
        "selector_inside_p50_ms": 0.5,
        "select_repeated_p50_ms": 0.7,
        "selector_rss_mb": 300.0,
        "sync_tools_per_s": 40.0,
    }
    assert cells(size) == ["200", "1.0 / 2.0 / 3.0", "0.5", "0.7", "300.0", "40.0"]
