"""What a registry broadcast costs a selector: the catalog copy read whole against one spliced from a few changed
tools (``with_changes``), in process, without the store's read.

    python scripts/bench_catalog_update.py SETS_DIR [--tools 10000] [--changed 1,10,100] [--repeats 20]
        [--selects 0 --during 10 --every 100]

SETS_DIR holds evaluation sets in ``toolsel eval``'s format, as ``toolsel bench --data`` reads them. Builds the
catalog of ``--tools`` bench tools (random unit vectors: their values do not change the work) whole three times,
then, for each count in ``--changed``, splices that many rewritten tools (a new description each) into it
``--repeats`` times. Prints the wall-clock p50 / max of each in milliseconds, with BLAS in ``TOOLSEL_BLAS_THREADS``
threads as the services run.

``--selects N`` then times N selects (the bench's mixed queries in turn, their vectors embedded before, the
hot-query cache off so every select retrieves) in the main thread, first with the catalog still, then while a
worker thread makes a new copy every ``--every`` milliseconds and swaps it in, as a selector's app does
(``asyncio.to_thread``), for each of three changes: a broadcast of ``--during`` changed tools spliced in; the
periodic check finding nothing changed (``stale_rows`` over every tool's last write, then ``rechecked`` with
the standing read again, as the app's check does); and the whole read it replaced (``build_catalog``). Prints the
selects' wall-clock p50 / p99 / max with the catalog still, while the changes apply, and of those that overlapped
one; how many took over twice the still p50; and the changes' own time.
"""

import argparse
import asyncio
import random
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from in_process import PLUGIN, bench_tools, catalog_row
from threadpoolctl import threadpool_limits

from toolsel.bench.catalog import bench_queries, interleaved, pooled_sets
from toolsel.bench.run import QUERY_SEED
from toolsel.contracts import SelectRequest
from toolsel.evaluation.dataset import BenchSet
from toolsel.heap import freeze_start_up_heap
from toolsel.runtime import load_model
from toolsel.services.selector.catalog import Catalog, Row, build_catalog, rechecked, stale_rows, with_changes
from toolsel.services.selector.selector import Selector
from toolsel.settings import get_settings


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--tools", type=int, default=10000)
    parser.add_argument("--changed", default="1,10,100")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--selects", type=int, default=0)
    parser.add_argument("--during", type=int, default=10)
    parser.add_argument("--every", type=float, default=100.0)
    args = parser.parse_args(argv)
    settings = get_settings()
    threadpool_limits(settings.blas_threads, user_api="blas")
    specs, vectors = bench_tools(pooled_sets(args.data), args.tools, settings.embedding_dim)
    rows = sorted((catalog_row(s, v) for s, v in zip(specs, vectors, strict=True)), key=lambda r: r["name"])
    whole = []
    for _ in range(3):
        started = time.perf_counter()
        catalog = build_catalog(rows, [], [], settings)
        whole.append(time.perf_counter() - started)
    print(f"{len(rows)} tools read whole: {_ms(whole)}")
    rng = random.Random(0)

    def rewritten(count: int) -> list[Row]:
        """``count`` of the tools, each with a new description."""
        chosen = rng.sample(range(len(specs)), count)
        revised = [specs[at] | {"description": f"{specs[at]['description']} ({rng.random():.6f})"} for at in chosen]
        return [catalog_row(spec, vectors[at]) for spec, at in zip(revised, chosen, strict=True)]

    for count in (int(c) for c in args.changed.split(",")):
        spliced = []
        for _ in range(args.repeats):
            written = rewritten(count)
            started = time.perf_counter()
            with_changes(catalog, written, (), [], [], settings)
            spliced.append(time.perf_counter() - started)
        print(f"{count} changed tools spliced in: {_ms(spliced)}")
    if not args.selects:
        return
    writes = [{"id": at, "key": f"{PLUGIN}/{r['name']}", "written": r["written"]} for at, r in enumerate(rows)]
    base = [r | {"key": f"{PLUGIN}/{r['name']}"} for r in rows]

    def checked(copy: Catalog) -> Catalog:
        stale, gone = stale_rows(copy, writes)
        if stale or gone:
            raise SystemExit("the periodic check found changes where there are none")
        return rechecked(copy, [], gone, [], [], base, [], settings)

    changes: dict[str, Callable[[Catalog], Catalog]] = {
        f"a broadcast of {args.during} tools": lambda copy: with_changes(
            copy, rewritten(args.during), (), [], [], settings
        ),
        "the periodic check": checked,
        "the whole read": lambda copy: build_catalog(rows, [], [], settings),
    }
    sets = pooled_sets(args.data)
    for name, change in changes.items():
        selects_during(catalog, sets, args.selects, args.every / 1e3, name, change)


def selects_during(
    catalog: Catalog,
    sets: Sequence[BenchSet],
    count: int,
    every: float,
    name: str,
    change: Callable[[Catalog], Catalog],
) -> None:
    """Selects timed with the catalog still, then while ``change`` makes a new copy and swaps it in every
    ``every`` seconds; the selects that overlapped a change are counted apart."""
    settings = get_settings().model_copy(update={"retrieval_cache_size": 0})
    selector = Selector(settings, catalog, asyncio.run(load_model(settings)))
    freeze_start_up_heap()  # as a selector does once it has started
    texts = bench_queries(interleaved([[q.text for q in s.queries] for s in sets], QUERY_SEED), 100)
    requests = [SelectRequest(query=text, tenant_id="t", dry_run=True) for text in texts]
    for request in requests:  # each query's vectors embedded once, before anything is timed
        selector.select(request)

    def timed() -> list[tuple[float, float]]:
        spans = []
        for i in range(count):
            started = time.perf_counter()
            selector.select(requests[i % len(requests)])
            spans.append((started, time.perf_counter()))
        return spans

    still = [end - start for start, end in timed()]
    stop, applied = threading.Event(), []

    def apply() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            selector.catalog = change(selector.catalog)
            applied.append((started, time.perf_counter()))
            stop.wait(every)

    worker = threading.Thread(target=apply)
    worker.start()
    spans = timed()
    stop.set()
    worker.join()
    overlapping = [end - start for start, end in spans if any(s < end and start < e for s, e in applied)]
    limit = 2 * float(np.percentile(still, 50))
    print(f"while {name} applies:")
    for label, spent in (
        ("catalog still", still),
        ("changes applying", [end - start for start, end in spans]),
        ("overlapping a change", overlapping),
    ):
        slow = sum(s > limit for s in spent)
        p50, p99 = np.percentile(spent, [50, 99]) * 1e3 if spent else (np.nan, np.nan)
        shown = f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {max(spent, default=np.nan) * 1e3:.2f} ms"
        print(f"  {len(spent)} selects, {label}: {shown}, {slow} over 2 x the still p50")
    print(f"  {len(applied)} changes applied meanwhile: {_ms([e - s for s, e in applied])}")


def _ms(seconds: Sequence[float]) -> str:
    return f"p50 {np.percentile(seconds, 50) * 1e3:.1f} ms, max {max(seconds) * 1e3:.1f} ms"


if __name__ == "__main__":
    main()
