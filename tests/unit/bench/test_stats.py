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


def test_rss_now_and_at_its_peak_from_proc_status() -> None:
    status = "Name:\tpython\nVmHWM:\t  512000 kB\nVmRSS:\t  204800 kB\nVmSwap: 0 kB\n"
    assert rss_mb(status) == 200.0
    assert rss_mb(status, "VmHWM") == 500.0
    with pytest.raises(ValueError, match="VmRSS"):
        rss_mb("Name: python\n")


def test_a_row_joins_the_percentiles_the_overhead_the_sync_and_the_indexer_memory_in_one_cell_each() -> None:
    size = {
        "tools": 200,
        "select_uncached_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0},
        "overhead_p50_ms": 0.4,
        "overhead_p99_ms": 0.9,
        "overhead_in_selector_p50_ms": 0.3,
        "overhead_in_selector_p99_ms": 0.6,
        "selector_inside_p50_ms": 0.5,
        "selector_inside_ms": {"p50": 0.5, "p95": 0.6, "p99": 0.8},
        "in_process_ms": {"p50": 0.2, "p95": 0.25, "p99": 0.3},
        "in_process_cpu_ms": {"p50": 0.15, "p95": 0.2, "p99": 0.25},
        "select_repeated_p50_ms": 0.7,
        "selector_rss_mb": 300.0,
        "sync_tools_per_s": 40.0,
        "sync_of_batch_rate": 0.8,
        "sync_of_model_rate": 0.9,
        "sync_write_s": 0.1,
        "sync_embed_s": 4.9,
        "sync_model_s": 4.5,
        "indexer_rss_mb": 450.0,
        "indexer_peak_rss_mb": 470.0,
    }
    assert cells(size) == [
        "200",
        "1.0 / 2.0 / 3.0",
        "0.4 / 0.9 (0.3 / 0.6)",
        "0.5 / 0.6 / 0.8",
        "0.2 / 0.25 / 0.3 (0.15)",
        "0.7",
        "300.0",
        "40.0 (80% / 90%)",
        "0.1 / 4.9 (4.5)",
        "450.0 / 470.0",
    ]
