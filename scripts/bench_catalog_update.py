"""What a registry broadcast costs a selector: the catalog copy read whole against one spliced from a few changed
tools (``with_changes``), in process, without the store's read.

    python scripts/bench_catalog_update.py SETS_DIR [--tools 10000] [--changed 1,10,100] [--repeats 20]

SETS_DIR holds evaluation sets in ``toolsel eval``'s format, as ``toolsel bench --data`` reads them. Builds the
catalog of ``--tools`` bench tools (random unit vectors: their values do not change the work) whole three times,
then, for each count in ``--changed``, splices that many rewritten tools (a new description each) into it
``--repeats`` times. Prints the wall-clock p50 / max of each in milliseconds, with BLAS in ``TOOLSEL_BLAS_THREADS``
threads as the services run.
"""

import argparse
import random
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from in_process import bench_tools, catalog_row
from threadpoolctl import threadpool_limits

from toolsel.bench.catalog import pooled_sets
from toolsel.services.selector.catalog import build_catalog, with_changes
from toolsel.settings import get_settings


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--tools", type=int, default=10000)
    parser.add_argument("--changed", default="1,10,100")
    parser.add_argument("--repeats", type=int, default=20)
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
    for count in (int(c) for c in args.changed.split(",")):
        spliced = []
        for _ in range(args.repeats):
            written = []
            for at in rng.sample(range(len(specs)), count):
                spec = specs[at] | {"description": f"{specs[at]['description']} (revised {rng.random():.6f})"}
                written.append(catalog_row(spec, vectors[at]))
            started = time.perf_counter()
            with_changes(catalog, written, (), [], [], settings)
            spliced.append(time.perf_counter() - started)
        print(f"{count} changed tools spliced in: {_ms(spliced)}")


def _ms(seconds: Sequence[float]) -> str:
    return f"p50 {np.percentile(seconds, 50) * 1e3:.1f} ms, max {max(seconds) * 1e3:.1f} ms"


if __name__ == "__main__":
    main()
