"""The in-process timings ``toolsel bench`` reports: every query timed once, every stage named, a stage the
hot-query cache skipped counted 0."""

from tests.unit.selector.test_selector import selector
from toolsel.services.selector.pipeline.run import STAGES
from toolsel.services.selector.timings import time_selections


def test_each_select_is_timed_with_each_stage_by_name() -> None:
    result = time_selections(selector(), "default", ["weather forecast", "send an email", "book a hotel room"])
    for total in (result["in_process_ms"], result["in_process_cpu_ms"]):
        assert 0 < total["p50"] <= total["p95"] <= total["p99"]
    assert list(result["stages_ms"]) == list(STAGES)
    assert all(result["stages_ms"][name] > 0 for name in STAGES)


def test_a_repeated_query_spends_nothing_in_retrieval() -> None:
    result = time_selections(selector(), "default", ["weather forecast"] * 3)
    assert result["stages_ms"]["retrieve"] == result["stages_ms"]["fuse"] == 0.0
    assert result["stages_ms"]["rerank"] > 0
