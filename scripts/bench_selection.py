"""The selection's own Python: repeated selects in process, CPU time per select, without NATS or the model's time.

    python scripts/bench_selection.py SETS_DIR [--tools 200] [--rounds 5] [--reviews 0 --scopes 10] [--uncached 0]

SETS_DIR holds evaluation sets in ``toolsel eval``'s format, one folder each (``tools.jsonl`` + ``queries.jsonl``),
as ``toolsel bench --data`` reads them. Builds a catalog of ``--tools`` tools from those sets as ``toolsel bench``
does (random unit vectors: the vectors' values do not change the work), embeds the bench's first 20 mixed queries
once, then times each select of them repeated (the hot-query cache answers retrieval, so what is timed is the rest
of the selection: policy, rerank, confidence, the reply). Prints the p50 CPU time per select of each round and the
best round. BLAS runs in ``TOOLSEL_BLAS_THREADS`` threads, as in the services (more would count their spinning).

``--reviews N`` gives the selector a review index of N past queries (random unit centroids over the catalog's
tools) spread over ``--scopes`` tenants; the requests come from each tenant in turn (the tools are shared with
all), and the rerank's fitness searches the tenant's entries on every select, cached or not.

``--uncached N`` then times the N mixed bench queries after those 20, each selected once, retrieval included (its
vectors embedded just before), as ``toolsel bench`` reports ``in_process_ms`` (``toolsel.services.selector.timings``):
the wall-clock and CPU milliseconds p50/p95/p99 and each stage's p50, as JSON. ``--rounds 0`` leaves the repeated
selects out.
"""

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from in_process import PLUGIN, bench_tools, in_process_catalog
from threadpoolctl import threadpool_limits

from toolsel.bench.catalog import bench_queries, interleaved, pooled_sets
from toolsel.bench.run import QUERY_SEED
from toolsel.contracts import SelectRequest
from toolsel.heap import freeze_start_up_heap
from toolsel.runtime import load_model
from toolsel.services.selector.catalog import ReviewIndex
from toolsel.services.selector.selector import Selector
from toolsel.services.selector.timings import time_selections
from toolsel.settings import get_settings

QUERIES = 20


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reviews", type=int, default=0)
    parser.add_argument("--scopes", type=int, default=10)
    parser.add_argument("--uncached", type=int, default=0)
    args = parser.parse_args(argv)
    settings = get_settings()
    threadpool_limits(settings.blas_threads, user_api="blas")  # as the services run: no BLAS threads spinning
    sets = pooled_sets(args.data)
    rng = np.random.default_rng(0)
    specs, vectors = bench_tools(sets, args.tools, settings.embedding_dim)
    selector = Selector(settings, in_process_catalog(specs, vectors, settings), asyncio.run(load_model(settings)))
    freeze_start_up_heap()  # as a selector does once it has started
    if args.reviews:
        selector.reviews = review_index(rng, [f"{PLUGIN}/{spec['name']}" for spec in specs], args.reviews, args.scopes)
    mixed = interleaved([[q.text for q in s.queries] for s in sets], QUERY_SEED)
    every = bench_queries(mixed, QUERIES + args.uncached)
    texts, uncached = every[:QUERIES], every[QUERIES:]  # the uncached ones past those the hot-query cache holds
    tenants = [f"tenant-{i % args.scopes}" for i in range(len(texts))]
    requests = [SelectRequest(query=text, tenant_id=t, dry_run=True) for text, t in zip(texts, tenants, strict=True)]
    for request in requests:  # embeds each once and fills the hot-query cache
        if not selector.select(request)[0].tools:
            raise SystemExit(f"no tool answers {request.query!r}: nothing would be measured")
    best = []
    for _ in range(args.rounds):
        spent = []
        for _ in range(10):
            for request in requests:
                started = time.process_time()
                selector.select(request)
                spent.append(time.process_time() - started)
        best.append(float(np.percentile(spent, 50)) * 1e3)
    if best:
        rounds = " ".join(f"{b:.3f}" for b in best)
        print(f"{args.tools} tools: p50 CPU ms per repeated select, each round: {rounds}; best {min(best):.3f}")
    if uncached:
        timed = json.dumps(time_selections(selector, "t", uncached))
        print(f"{args.tools} tools, {len(uncached)} queries uncached: {timed}")


def review_index(rng: np.random.Generator, keys: list[str], entries: int, scopes: int) -> ReviewIndex:
    """``entries`` past queries of the tools ``keys`` name, round the tools and the tenants in turn."""
    centroids = rng.standard_normal((entries, get_settings().embedding_dim)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    return ReviewIndex(
        [keys[i % len(keys)] for i in range(entries)],
        centroids,
        rng.uniform(0.5, 1.5, entries),
        np.array([f"tenant-{i % scopes}" for i in range(entries)]),
    )


if __name__ == "__main__":
    main()
