"""Feedback, export, analytics and the report against the real stack (and a headless Chromium for the report)."""

import json
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import polars as pl
import pytest

from tests.integration.catalog import (
    CHROMIUM,
    eventually,
    needs_chromium,
    plugin_sync,
    run_cli,
    sync_and_wait,
    tool,
    unique,
)
from toolsel.client import ToolselClient
from toolsel.contracts import FeedbackEvent, OutcomeEvent, ToolCall, subjects
from toolsel.contracts.admin import AnalyticsQuery, Heatmap, SelectionMetrics
from toolsel.stack import Endpoints

pytestmark = pytest.mark.integration


async def _history(client: ToolselClient, pool: asyncpg.Pool) -> tuple[str, str]:
    """A plugin with two selections (on two pages) and an outcome that called the first tool."""
    plugin, tenant = unique("an"), unique("t")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]))
    first = await client.select(query="weather in Paris", tenant_id=tenant, page="/inbox", seed=1)
    await client.select(query="email my boss", tenant_id=tenant, page="/home", seed=1)
    called = first.tools[0]
    call = ToolCall(plugin_id=called.plugin_id, name=called.name, success=True, latency_ms=12)
    await client.report([OutcomeEvent(selection_id=first.selection_id, calls=[call])])
    stored = await eventually(
        lambda: pool.fetchval("SELECT count(*) = 1 FROM outcomes WHERE selection_id = $1", first.selection_id)
    )
    assert stored
    return plugin, tenant


async def test_feedback_cli_submit_is_stored_by_the_learner_and_listed(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    plugin, tenant = unique("fb"), unique("t")
    await client.sync(plugin_sync(plugin, tenant, [tool("send_email")]))
    ref = f"{plugin}/send_email"
    submitted = run_cli(
        endpoints, "feedback", "submit", "--tool", ref, "--rating", "0.85", "--comment", "Fast", "--tenant", tenant
    )
    assert submitted.returncode == 0, submitted.stderr
    stored = await eventually(
        lambda: pool.fetchval(
            "SELECT count(*) FROM tool_feedback f JOIN tools t ON t.id = f.tool_id WHERE t.plugin_id = $1", plugin
        )
    )
    assert stored == 1

    listed = run_cli(endpoints, "feedback", "list", "--tool", ref, "--limit", "20", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert [(f["rating"], f["comment"]) for f in json.loads(listed.stdout)["feedback"]] == [(0.85, "Fast")]

    quality = run_cli(endpoints, "feedback", "metrics", "--tool", ref, "--format", "json")
    assert quality.returncode == 0, quality.stderr
    (metrics,) = json.loads(quality.stdout)["tools"]
    assert (metrics["ratings"], metrics["average_rating"]) == (1, pytest.approx(0.85))
    assert run_cli(endpoints, "feedback", "metrics", "--degraded").returncode == 0

    wrong = run_cli(endpoints, "feedback", "list", "--tool", ref, admin_token="wrong")
    assert wrong.returncode == 1
    assert "unauthorized" in wrong.stderr


async def test_export_is_incremental_and_readable_by_polars(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    await _history(client, pool)
    out = Path(tempfile.mkdtemp(prefix="toolsel-export-"))
    first = run_cli(endpoints, "export", "--out", str(out))
    assert first.returncode == 0, first.stderr
    selections = pl.read_parquet(out / "selections", hive_partitioning=True)
    stored = await pool.fetchval("SELECT count(*) FROM selection_events")
    assert selections.height == stored
    assert selections["selection_id"].n_unique() == stored
    assert "date" in selections.columns
    files = _parquet_files(out)
    assert any(f.startswith("outcomes/date=") for f in files)

    second = run_cli(endpoints, "export", "--out", str(out))
    assert second.returncode == 0, second.stderr
    assert _parquet_files(out) == files

    plugin, _ = await _history(client, pool)
    third = run_cli(endpoints, "export", "--out", str(out))
    assert third.returncode == 0, third.stderr
    again = pl.read_parquet(out / "selections", hive_partitioning=True)
    assert again.height == await pool.fetchval("SELECT count(*) FROM selection_events")
    assert again["selection_id"].n_unique() == again.height
    local = run_cli(endpoints, "analytics", "heatmap", "--export", str(out), "--json")
    assert local.returncode == 0, local.stderr
    assert any(c["tool"].startswith(f"{plugin}/") for c in json.loads(local.stdout)["cells"])


async def test_an_export_follows_when_feedback_arrived_not_the_date_its_sender_gave(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """The mark of the feedback table followed ``occurred_at``, which the sender dates: one feedback dated in 2999
    moved it there, and no export to that directory wrote another feedback row."""
    plugin, tenant = unique("fbx"), unique("t")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool("send_email")]))
    ahead = FeedbackEvent(
        plugin_id=plugin,
        name="send_email",
        tenant_id=tenant,
        rating=1.0,
        occurred_at=datetime(2999, 12, 31, tzinfo=UTC),
    )
    later = FeedbackEvent(plugin_id=plugin, name="send_email", tenant_id=tenant, rating=0.5)
    out = Path(tempfile.mkdtemp(prefix="toolsel-export-"))
    stored = "SELECT count(*) = 1 FROM tool_feedback WHERE event_id = $1"
    for event in (ahead, later):
        await client.report([event])
        assert await eventually(lambda e=event: pool.fetchval(stored, e.event_id))  # type: ignore[misc]
        exported = run_cli(endpoints, "export", "--out", str(out))
        assert exported.returncode == 0, exported.stderr
    feedback = pl.read_parquet(out / "feedback", hive_partitioning=True)
    assert {str(ahead.event_id), str(later.event_id)} <= set(feedback["event_id"])


async def test_analytics_over_the_store(client: ToolselClient, pool: asyncpg.Pool) -> None:
    plugin, _ = await _history(client, pool)
    numbers = await client.admin(subjects.ADMIN_ANALYTICS_METRICS, AnalyticsQuery(), SelectionMetrics)
    assert numbers.selections == await pool.fetchval("SELECT count(*) FROM selection_events")
    assert numbers.outcomes.get("success", 0) >= 1
    assert numbers.latency_p50_ms is not None
    heat = await client.admin(subjects.ADMIN_ANALYTICS_HEATMAP, AnalyticsQuery(), Heatmap)
    pages = {c.page for c in heat.cells if c.tool.startswith(f"{plugin}/")}
    assert pages == {"/inbox", "/home"}


@needs_chromium
async def test_report_renders_its_images_in_a_headless_browser(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    await _history(client, pool)
    work = Path(tempfile.mkdtemp(prefix="toolsel-report-"))
    page = work / "report.html"
    made = run_cli(endpoints, "report", "--out", str(page))
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    assert text.count("data:image/png;base64,") == 3
    assert _rendered_images(work, page) == "rendered 3/3"


PROBE = """<html><head><title>waiting</title></head><body><iframe id="r" src="REPORT"></iframe><script>
document.getElementById("r").onload = () => {
  const images = [...document.getElementById("r").contentDocument.images];
  const shown = images.filter(i => i.complete && i.naturalWidth > 0).length;
  document.title = "rendered " + shown + "/" + images.length;
};</script></body></html>"""


def _rendered_images(work: Path, page: Path) -> str:
    """Load the report in a frame of a probe page in headless Chromium; the probe's title says how many of the
    report's images decoded (naturalWidth > 0)."""
    probe = work / "probe.html"
    probe.write_text(PROBE.replace("REPORT", page.name))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    flags += ["--disable-component-update", "--disable-sync", "--no-first-run", "--allow-file-access-from-files"]
    flags += [f"--user-data-dir={work / 'profile'}", "--virtual-time-budget=5000", "--dump-dom"]
    dumped = subprocess.run([CHROMIUM, *flags, probe.as_uri()], capture_output=True, text=True, timeout=120)
    start = dumped.stdout.find("<title>") + len("<title>")
    return dumped.stdout[start : dumped.stdout.find("</title>")] or dumped.stderr[-2000:]


def _parquet_files(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))


async def test_a_report_of_one_tenant_holds_its_selections_and_tools_only(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    plugin, tenant = await _history(client, pool)
    other, _ = await _history(client, pool)
    work = Path(tempfile.mkdtemp(prefix="toolsel-report-"))
    own, elsewhere = work / "own.html", work / "elsewhere.html"
    assert run_cli(endpoints, "report", "--out", str(own), "--tenant", tenant).returncode == 0
    assert run_cli(endpoints, "report", "--out", str(elsewhere), "--tenant", unique("t")).returncode == 0
    text = own.read_text()
    assert f"tenant {tenant}" in text
    assert "<td>selections</td><td>2</td>" in text
    assert f"{plugin}/get_weather" in text
    assert other not in text
    assert plugin not in elsewhere.read_text()
    refused = run_cli(endpoints, "report", "--out", str(own), "--tenant", "<script>")
    assert refused.returncode != 0
    assert "tenant" in refused.stderr
