"""Select latency through NATS: p50/p99 of the round trip a client sees, uncached and repeated queries.

    python scripts/bench_select.py [--requests 500]

Uses a running `toolsel up` (or TOOLSEL_NATS_URL); otherwise starts an embedded stack in a temporary home.
Syncs the demo catalog first. Dry runs, so the numbers are the reply path alone.
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import numpy as np

from cli.demo import demo_catalog
from toolsel.client import ToolselClient
from toolsel.settings import Settings, get_settings
from toolsel.stack import Stack, configured_endpoints


def _percentiles(samples: list[float]) -> str:
    ms = np.array(samples) * 1000
    return f"p50 {np.percentile(ms, 50):.2f} ms  p99 {np.percentile(ms, 99):.2f} ms  (n={len(ms)})"


async def _measure(url: str, requests: int) -> None:
    async with ToolselClient(url) as client:
        catalog = demo_catalog()
        for sync in catalog:
            await client.sync(sync)
        tools = sum(len(s.tools) for s in catalog)
        queries = [q for s in catalog for t in s.tools for q in t.example_queries]
        await asyncio.sleep(1.0)  # let the selectors reload
        uncached, repeated = [], []
        for i in range(requests):
            started = time.perf_counter()
            await client.select(query=f"{queries[i % len(queries)]} ({i})", dry_run=True)
            uncached.append(time.perf_counter() - started)
        for i in range(requests):
            started = time.perf_counter()
            await client.select(query=queries[i % 20], dry_run=True)
            repeated.append(time.perf_counter() - started)
        print(f"catalog: {tools} tools")
        print(f"uncached queries: {_percentiles(uncached)}")
        print(f"repeated queries: {_percentiles(repeated[len(repeated) // 5 :])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    endpoints = configured_endpoints(get_settings())
    stack = None
    if endpoints is None:
        stack = Stack(Settings(home=Path(tempfile.mkdtemp(prefix="toolsel-bench-"))))
        endpoints = asyncio.run(stack.start())
    try:
        asyncio.run(_measure(endpoints.nats_url, args.requests))
    finally:
        if stack is not None:
            stack.stop()


if __name__ == "__main__":
    main()
