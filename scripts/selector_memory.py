"""Where a selector's memory goes: its resident size after each part loads, built in process as the service builds it.

    python scripts/selector_memory.py SETS_DIR [--tools 10000] [--queries 300]

SETS_DIR holds evaluation sets in ``toolsel eval``'s format, as ``toolsel bench --data`` reads them. In the order a
selector starts: the service's imports (with the model's runtime), the selector (the spelling stage's word list),
the model, then a catalog of ``--tools`` bench tools (random unit vectors; the store's rows as a whole read hands
them over, built in a worker thread, the rows dropped and the freed heap given back as the service does),
``--queries`` selects of mixed bench queries (the hot-query cache fills), a second copy read whole and swapped in,
and the same selects again. Prints the resident size (``VmRSS``) after each and what each added (``toolsel bench``
reports the running service's), then the containers the garbage collector tracks and what a full pass over them
costs, before and after the heap is frozen as the service freezes it.
"""

import argparse
import asyncio
import gc
import json
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from toolsel.bench.stats import rss_mb


class Resident:
    """Prints the process's resident size after each part, and what the part added."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, part: str) -> None:
        gc.collect()
        now = rss_mb(Path("/proc/self/status").read_text())
        print(f"{part:50s} {now:7.1f} MB  {now - self.last:+7.1f}", flush=True)
        self.last = now


def bench_rows(data: Path, tools: int, dim: int, queries: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The store's rows of ``tools`` bench tools and ``queries`` mixed bench queries, made in a child process: the
    bench sets it reads never count in the selector's memory."""
    from in_process import bench_tools, catalog_row

    from toolsel.bench.catalog import bench_queries, interleaved, pooled_sets
    from toolsel.bench.run import QUERY_SEED

    sets = pooled_sets(data)
    specs, vectors = bench_tools(sets, tools, dim)
    texts = bench_queries(interleaved([[q.text for q in s.queries] for s in sets], QUERY_SEED), queries)
    return [catalog_row(spec, vector) for spec, vector in zip(specs, vectors, strict=True)], texts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    resident = Resident()
    resident("python")
    import fastembed  # noqa: F401  (the model's runtime, which the service imports as it loads the model)
    from threadpoolctl import threadpool_limits

    from toolsel.contracts import DEFAULT_TENANT, SelectRequest
    from toolsel.heap import freeze_start_up_heap, release_freed_memory
    from toolsel.runtime import load_model
    from toolsel.services.selector.app import create_app  # noqa: F401  (the service's own imports)
    from toolsel.services.selector.catalog import build_catalog
    from toolsel.services.selector.selector import Selector
    from toolsel.settings import get_settings

    resident("the service's imports")
    settings = get_settings()
    threadpool_limits(settings.blas_threads, user_api="blas")
    selector = Selector(settings, build_catalog([], [], [], settings), embedder=None)
    resident("the selector (the spelling stage's word list)")
    selector.embedder = asyncio.run(load_model(settings))
    selector.embedder.embed_query("warm up")
    resident("the model, one query embedded")
    maker = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    worker = ThreadPoolExecutor(1)  # the service builds each copy in a worker thread
    made = (args.data, args.tools, settings.embedding_dim, args.queries)
    rows, texts = maker.submit(bench_rows, *made).result()
    resident(f"{args.tools:,} bench tools as the store's rows")
    selector.catalog = worker.submit(build_catalog, rows, [], [], settings).result()
    del rows
    release_freed_memory()
    resident("the catalog built, its rows dropped, heap trimmed")
    requests = [SelectRequest(query=text, tenant_id=DEFAULT_TENANT, dry_run=True) for text in texts]
    for request in requests:
        selector.select(request)
    resident(f"{len(requests)} selects")
    rows, _ = maker.submit(bench_rows, *made).result()
    selector.catalog = worker.submit(build_catalog, rows, [], [], settings).result()
    del rows
    release_freed_memory()
    resident("a second copy read whole and swapped in, trimmed")
    for request in requests:
        selector.select(request)
    resident(f"the {len(requests)} selects again")
    tracked, walked = len(gc.get_objects()), full_collection_ms()
    freeze_start_up_heap()  # as the service does once it has started
    frozen = full_collection_ms()
    print(f"the garbage collector: {tracked:,} containers, a full pass {walked:.1f} ms; frozen, {frozen:.1f} ms")
    maker.shutdown()
    print(json.dumps({"tools": args.tools, "rss_mb": resident.last}))


def full_collection_ms() -> float:
    """One full pass of the cyclic garbage collector, in milliseconds (p50 of 3)."""
    passes = []
    for _ in range(3):
        started = time.perf_counter()
        gc.collect()
        passes.append((time.perf_counter() - started) * 1000)
    return sorted(passes)[1]


if __name__ == "__main__":
    main()
