"""How long the dashboard takes to serve a catalog page of a 10,000-tool catalog: the whole HTTP request (sign-in
session, the admin request over NATS to the indexer, PostgreSQL, the rendered page), from a client on the same
machine.

    eval "$(toolsel env)"   # a running `toolsel up` with its dashboard
    python scripts/bench_dashboard.py SETS_DIR [--tools 10000] [--repeats 20]

Syncs the first ``--tools`` tools of the pooled bench sets as plugins ``dashbench-*`` of tenant ``dashbench``
(skipped when they are there already; the sync embeds them, minutes on a small machine), then times each page
``--repeats`` times and prints p50 / p95 / max in milliseconds: over HTTP, and loaded in Debian's headless Chromium
(navigation start to the load event, the page drawn; Playwright drives it).
"""

import argparse
import asyncio
import os
import shutil
import statistics
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

from toolsel.bench.catalog import catalog_of, pooled_sets
from toolsel.client import ToolselClient
from toolsel.contracts import ToolQuery
from toolsel.evaluation.dataset import catalog_syncs, wire_names

PREFIX = TENANT = "dashbench"


async def ensure_catalog(folder: Path, size: int) -> int:
    """Sync the catalog unless its tools are all there; returns how many live tools the prefix has."""
    tools = catalog_of([t for s in pooled_sets(folder) for t in s.tools], size)
    async with ToolselClient(os.environ["TOOLSEL_NATS_URL"]) as client:
        present = (await client.list_tools(ToolQuery(search=f"{PREFIX}-", limit=1))).total or 0
        if present < size:
            started = time.perf_counter()
            for sync in catalog_syncs(tools, wire_names([t.name for t in tools]), PREFIX, TENANT):
                await client.sync(sync)
            print(f"synced {size:,} tools in {time.perf_counter() - started:.0f} s")
        return (await client.list_tools(ToolQuery(search=f"{PREFIX}-", limit=1))).total or 0


def timed(http: httpx.Client, path: str, repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` GETs of ``path`` (after one untimed warm-up)."""
    http.get(path).raise_for_status()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        http.get(path).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return times


LOADED_MS = (
    "(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()"
)


def loaded_in_browser(url: str, token: str, paths: list[str], repeats: int) -> list[list[float]]:
    """Milliseconds from navigation start to the load event of each of ``repeats`` loads of each path."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(base_url=url)
        page.goto("/sign-in")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        times = []
        for path in paths:
            page.goto(path)
            loads = []
            for _ in range(repeats):
                page.goto(path)
                loads.append(float(page.evaluate(LOADED_MS)))
            times.append(loads)
        browser.close()
    return times


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):7.1f}   p95 {p95:7.1f}   max {ms[-1]:7.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, help="folder of evaluation sets (SETS_DIR: one folder per set)")
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20)
    options = parser.parse_args()
    live = asyncio.run(ensure_catalog(options.data, options.tools))
    url = os.environ["TOOLSEL_DASHBOARD_URL"]
    with httpx.Client(base_url=url, headers={"accept": "text/html"}, timeout=30, follow_redirects=True) as http:
        http.post("/sign-in", data={"token": os.environ["TOOLSEL_ADMIN_TOKEN"]}).raise_for_status()
        total = int(http.get("/api/tools", params={"limit": 1}).json()["total"])
        last = -(-total // 50)
        pages = {
            "catalog, first page": "/catalog",
            f"catalog, page {last // 2} of {last}": f"/catalog?page={last // 2}",
            f"catalog, last page ({last})": f"/catalog?page={last}",
            f"catalog, search '{PREFIX}-1' ": f"/catalog?search={PREFIX}-1",
            "API: 50 tools at offset 9,950": "/api/tools?limit=50&offset=9950",
        }
        print(f"{total:,} tools in the catalog ({live:,} of them {PREFIX}-*); {options.repeats} GETs each, ms:")
        for name, path in pages.items():
            print(f"  {name:<36} {summary(timed(http, path, options.repeats))}")
    shown = [path for path in pages.values() if not path.startswith("/api/")]
    loads = loaded_in_browser(url, os.environ["TOOLSEL_ADMIN_TOKEN"], shown, options.repeats)
    print(f"loaded in headless Chromium, {options.repeats} loads each, ms:")
    for name, ms in zip([n for n, p in pages.items() if p in shown], loads, strict=True):
        print(f"  {name:<36} {summary(ms)}")


if __name__ == "__main__":
    main()
