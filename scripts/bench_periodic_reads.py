"""What a selector's safety nets and broadcasts read and build, before and after they followed what changed: the
store's side of the periodic registry check against the whole read, the posteriors' check against the whole
table, and a broadcast's lookback re-reading tools its copy holds.

    python scripts/bench_periodic_reads.py SETS_DIR [--tools 10000] [--posteriors 70000] [--recent 1000]
        [--repeats 7]

Starts an embedded PostgreSQL in a temporary directory, writes ``--tools`` bench tools (random unit vectors) and
``--posteriors`` posteriors over 50 tenants and 7 contexts, ``--recent`` of them written in the last two minutes,
then prints p50 of ``--repeats`` runs: wall milliseconds and this process's CPU milliseconds (what a selector's
event loop spends decoding), and the worker thread's build.
"""

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from in_process import PLUGIN, bench_tools, catalog_row

from toolsel.bench.catalog import pooled_sets
from toolsel.bench.stats import percentiles_ms
from toolsel.embedded import EmbeddedPostgres
from toolsel.services.selector.catalog import (
    Catalog,
    Row,
    build_catalog,
    build_posteriors,
    merge_posteriors,
    unseen,
    with_changes,
)
from toolsel.settings import Settings, get_settings
from toolsel.store import catalog as store
from toolsel.store.pool import create_pool

INSERT_TOOLS = """
INSERT INTO tools (plugin_id, name, spec, content_hash, embedding) VALUES ($1, $2, $3, repeat('0', 64), $4)
"""
INSERT_POSTERIORS = """
INSERT INTO tool_bandit_stats (tool_id, tenant_id, context_key, alpha, beta, last_success_at, updated_at)
SELECT ids.a[1 + (g * 7919) % array_length(ids.a, 1)], 'tenant-' || (g % 50), 'free:*:ctx' || (g % 7),
       1 + random() * 10, 1 + random() * 3, now(), now() - interval '1 hour'
FROM generate_series(1, $1) g, (SELECT array_agg(id ORDER BY id) AS a FROM tools) ids
ON CONFLICT DO NOTHING
"""
RECENT = "UPDATE tool_bandit_stats SET updated_at = now() WHERE ctid IN (SELECT ctid FROM tool_bandit_stats LIMIT $1)"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--tools", type=int, default=10000)
    parser.add_argument("--posteriors", type=int, default=70000)
    parser.add_argument("--recent", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        asyncio.run(measure(args, Path(home)))


async def measure(args: argparse.Namespace, home: Path) -> None:
    settings = get_settings()
    specs, vectors = bench_tools(pooled_sets(args.data), args.tools, settings.embedding_dim)
    server = EmbeddedPostgres(home / "postgres")
    pool = await create_pool(server.start())
    try:
        rows = [(PLUGIN, s["name"], json.dumps(s), v.tolist()) for s, v in zip(specs, vectors, strict=True)]
        await pool.executemany(INSERT_TOOLS, rows)
        await pool.execute(INSERT_POSTERIORS, args.posteriors)
        await pool.execute(RECENT, args.recent)

        print(f"{args.tools} tools, every minute (wall / the event loop's CPU):")
        for name, read in (
            ("each tool's key and last write (the check)", store.live_writes),
            ("the base standing (the check)", store.base_standing),
            ("the whole catalog (the read before)", store.live_tools),
        ):
            print(f"  {name}: {await timed(read, pool, args.repeats)}")

        held = build_posteriors(await store.posteriors(pool))
        print(f"{await store.posterior_count(pool)} posteriors, {args.recent} written in the last two minutes:")

        async def whole() -> None:
            await asyncio.to_thread(build_posteriors, await store.posteriors(pool))

        async def check() -> None:
            recent = await asyncio.to_thread(build_posteriors, await store.posteriors_since(pool, 120.0))
            if merge_posteriors(held, recent) != await store.posterior_count(pool):
                raise SystemExit("the check would read the whole table: the counts disagree")

        print(f"  the whole table (before): {await timed(lambda _: whole(), pool, args.repeats)}")
        print(f"  the check (now): {await timed(lambda _: check(), pool, args.repeats)}")
    finally:
        await pool.close()
        server.stop()

    catalog = build_catalog([catalog_row(s, v) for s, v in zip(specs, vectors, strict=True)], [], [], settings)
    print(f"a broadcast whose lookback reads again tools the copy holds, {args.tools} tools (in process):")
    for count in (c for c in (100, 1000, 2500) if c <= args.tools):
        again = [catalog_row(s, v) for s, v in zip(specs[:count], vectors[:count], strict=True)]
        before = spent(partial(with_changes, catalog, again, (), [], [], settings), args.repeats)
        now = spent(partial(filtered_first, catalog, again, settings), args.repeats)
        print(f"  {count}: spliced again (before) {before:.1f} ms, filtered first (now) {now:.1f} ms")


async def timed(read: Callable[[Any], Awaitable[object]], pool: Any, repeats: int) -> str:
    """p50 wall and CPU milliseconds of ``read(pool)``: the CPU is this thread's (an event loop's) and, where the
    read builds in a worker thread, is not counted in it."""
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.thread_time()
        await read(pool)
        walls.append(time.perf_counter() - started)
        cpus.append(time.thread_time() - cpu)
    return f"{percentiles_ms(walls, (50,))['p50']:.1f} / {percentiles_ms(cpus, (50,))['p50']:.1f} ms"


def filtered_first(catalog: Catalog, rows: Sequence[Row], settings: Settings) -> Catalog:
    """A broadcast's splice as it runs now: only the rows whose write the copy lacks."""
    return with_changes(catalog, unseen(catalog, rows), (), [], [], settings)


def spent(fn: Callable[[], object], repeats: int) -> float:
    """p50 milliseconds of ``fn()``."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return percentiles_ms(times, (50,))["p50"]


if __name__ == "__main__":
    main()
