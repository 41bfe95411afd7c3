"""``toolsel bench`` end to end at tiny sizes: its own stack, every number present, the catalog grown in place."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_eval import tiny_set
from toolsel.services.selector.pipeline.run import STAGES
from toolsel.stack import TOOLSEL_COMMAND


def test_bench_measures_each_size_on_its_own_stack(tmp_path: Path) -> None:
    data = tmp_path / "sets"
    data.mkdir()
    tiny_set(data / "tiny")
    out = tmp_path / "bench.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSEL_")} | {"COLUMNS": "200"}
    done = subprocess.run(
        [*TOOLSEL_COMMAND, "bench", "--data", str(data), "--sizes", "9,4", "--requests", "20", "--json", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sync tools/s" in done.stdout

    result = json.loads(out.read_text())
    assert result["sets"] == ["tiny"]
    assert set(result["reference"]) == {"round_trip_p50_ms", "embed_query_p50_ms", "batch_texts_per_s"}
    small, large = result["sizes"]
    assert (small["tools"], large["tools"]) == (4, 9)
    assert (small["sync_embedded"], large["sync_embedded"]) == (4, 5)  # the larger catalog adds only the rest
    for size in result["sizes"]:
        u, inside = size["select_uncached_ms"], size["selector_inside_ms"]
        assert 0 < u["p50"] <= u["p95"] <= u["p99"]
        assert 0 < inside["p50"] <= inside["p95"] <= inside["p99"]
        assert size["overhead_p50_ms"] < u["p50"]  # each select less its own query's embedding and a round trip
        assert size["overhead_in_selector_p50_ms"] < inside["p50"]  # the reply's latency less the same embedding
        assert size["overhead_p50_ms"] <= size["overhead_p99_ms"] < u["p99"]
        assert size["overhead_in_selector_p50_ms"] <= size["overhead_in_selector_p99_ms"] < inside["p99"]
        stages = size["stages_ms"]
        for in_process in (size["in_process_ms"], size["in_process_cpu_ms"]):
            assert 0 < in_process["p50"] <= in_process["p95"] <= in_process["p99"]
        assert list(stages) == list(STAGES)
        assert min(stages.values()) > 0  # each query once: no stage skipped by the hot-query cache at p50
        assert size["selector_rss_mb"] > 0
        assert size["sync_tools_per_s"] > 0
        assert size["sync_of_batch_rate"] > 0
        assert 0 <= size["sync_write_s"] <= size["sync_s"]
        assert size["sync_write_s"] + size["sync_embed_s"] == pytest.approx(size["sync_s"], abs=0.02)
        assert 0 < size["sync_model_s"] <= size["sync_embed_s"] + 0.01
        assert 0 < size["sync_of_model_rate"] <= 1
        assert 0 < size["indexer_rss_mb"] <= size["indexer_peak_rss_mb"]
    scaling = result["throughput"]
    assert (scaling["tools"], scaling["in_flight"]) == (9, 16)
    one, two = scaling["one_selector_per_s"], scaling["two_selectors_per_s"]
    assert one == pytest.approx(sum(scaling["one_selector_before_after_per_s"]) / 2, abs=0.06)
    assert min(scaling["one_selector_before_after_per_s"]) > 0
    assert two > 0
    assert scaling["two_over_one"] == pytest.approx(two / one, abs=0.01)
    for waited in (scaling["one_selector_select_ms"], scaling["two_selectors_select_ms"]):
        assert 0 < waited["p50"] <= waited["p95"] <= waited["p99"]
    # 16 in flight: a select waits, on average, for 16 answers' time (Little's law); the middle one at least for one
    assert scaling["one_selector_select_ms"]["p50"] > 1000 / max(scaling["one_selector_before_after_per_s"])
    assert "throughput at 9 tools, 16 in flight" in done.stdout
    assert "select p50 / p99 under that load" in done.stdout


def test_bench_refuses_a_bad_size_list(tmp_path: Path) -> None:
    done = subprocess.run(
        [*TOOLSEL_COMMAND, "bench", "--data", str(tmp_path), "--sizes", "ten"], capture_output=True, text=True
    )
    assert done.returncode == 2
