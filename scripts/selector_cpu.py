"""What a select costs the selector's cores under load: selects per second with ``toolsel bench``'s load (16 in
flight from a client in its own process, fresh mixed bench queries), and each process's CPU milliseconds per select.

    python scripts/selector_cpu.py SETS_DIR [--tools 10000] [--requests 600] [--runs 2]

SETS_DIR holds evaluation sets in ``toolsel eval``'s format, as ``toolsel bench --data`` reads them. Starts a stack
of its own (the selector's settings from the environment: ``TOOLSEL_EMBEDDING_WORKERS=1 python scripts/...``
measures that setting), syncs ``--tools`` pooled bench tools, then ``--runs`` times: 100 queries to warm up and
``--requests`` timed, reading every process's CPU time from ``/proc`` before and after. Prints the selects per
second and, per process that used a tenth of a second or more, its CPU seconds and milliseconds per select (the
client's own process has ended by then, and is not among them).
"""

import argparse
import asyncio
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from toolsel.bench.catalog import bench_queries, catalog_of, interleaved, pooled_sets
from toolsel.bench.load import in_own_process, throughput
from toolsel.bench.run import IN_FLIGHT, PLUGIN_PREFIX, QUERY_SEED, TENANT
from toolsel.client import ToolselClient
from toolsel.evaluation.dataset import catalog_syncs, wire_names
from toolsel.evaluation.ranking import load_catalog
from toolsel.stack import temporary_stack

WARM_UP = 100
SHOWN_CPU_S = 0.1


def cpu_seconds() -> dict[str, float]:
    """Every process's user and system CPU seconds so far, by pid and command line."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:100]
        except OSError:  # it ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        found[f"{pid} {command}"] = (int(fields[11]) + int(fields[12])) / tick
    return found


async def measure(data: Path, tools: int, requests: int, runs: int) -> None:
    sets = pooled_sets(data)
    pool = [t for s in sets for t in s.tools]
    queries = bench_queries(
        interleaved([[q.text for q in s.queries] for s in sets], QUERY_SEED), WARM_UP + runs * requests
    )
    async with temporary_stack({}, "selector-cpu-") as (endpoints, _):
        async with ToolselClient(endpoints.nats_url, timeout_s=60) as client:
            chosen = catalog_of(pool, tools)
            syncs = catalog_syncs(chosen, wire_names([t.name for t in chosen]), PLUGIN_PREFIX, TENANT)
            for sync in syncs:
                await client.sync(sync)
            await load_catalog(client, syncs, wire_names([t.name for t in chosen]))
        for run in range(runs):
            timed = queries[WARM_UP + run * requests : WARM_UP + (run + 1) * requests]
            before, started = cpu_seconds(), time.perf_counter()
            load = await in_own_process(throughput, endpoints.nats_url, TENANT, queries[:WARM_UP], timed, IN_FLIGHT)
            wall, after = time.perf_counter() - started, cpu_seconds()
            used: dict[str, float] = defaultdict(float)
            for process, seconds in after.items():
                used[process] += max(seconds - before.get(process, 0.0), 0.0)
            print(f"run {run + 1}: {load.per_s} selects/s, {wall:.1f} s")
            selects = WARM_UP + len(timed)
            for process, seconds in sorted(used.items(), key=lambda item: -item[1]):
                if seconds >= SHOWN_CPU_S:
                    print(f"  {seconds:7.2f} s  {seconds / selects * 1000:6.2f} ms/select  {process}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    asyncio.run(measure(args.data, args.tools, args.requests, args.runs))


if __name__ == "__main__":
    main()
