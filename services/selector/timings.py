"""The selection's own time in process, without the query embedding, stage by stage: what ``toolsel bench`` reports
beside the round trips it times through NATS (``in_process_ms``, ``stages_ms``), on the catalog of its stack."""

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from toolsel.contracts import SelectRequest
from toolsel.heap import freeze_start_up_heap
from toolsel.runtime import load_model
from toolsel.services.selector.app import read_catalog
from toolsel.services.selector.catalog import build_rules
from toolsel.services.selector.pipeline.run import STAGES
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings
from toolsel.store import catalog as store
from toolsel.store.pool import create_pool

PERCENTILES = (50, 95, 99)


async def in_process(settings: Settings, database_url: str, tenant: str, queries: Sequence[str]) -> dict[str, Any]:
    """A selector built as the service builds its own (the store's catalog and rules, the model), timing one select
    of each query for ``tenant`` after its vectors are cached: milliseconds p50/p95/p99 of the whole selection and
    p50 of each stage (a stage the hot-query cache skipped counts 0)."""
    pool = await create_pool(database_url)
    try:
        catalog = await read_catalog(pool, settings)
        rules = build_rules(await store.active_rules(pool))
    finally:
        await pool.close()
    selector = Selector(settings, catalog, await load_model(settings), rules=rules)
    freeze_start_up_heap()  # as the service does once it has started
    return await asyncio.to_thread(time_selections, selector, tenant, queries)


def time_selections(selector: Selector, tenant: str, queries: Sequence[str]) -> dict[str, Any]:
    """Each query selected once, its vectors embedded just before (so the time is the selection's alone, with the
    spelling repair the service runs ahead to know what to embed counted in its stage), with BLAS in
    ``TOOLSEL_BLAS_THREADS`` threads as the services run it. Beside the wall-clock milliseconds, the thread's
    CPU milliseconds (``in_process_cpu_ms``): on a machine shared with other work the wall clock counts the time
    the thread waited for a core, which at p50 can be most of it."""
    embedder = selector.embedder
    total: list[float] = []
    used: list[float] = []
    stages: dict[str, list[float]] = {name: [] for name in STAGES}
    with threadpool_limits(selector.settings.blas_threads, user_api="blas"):
        for query in queries:
            request = SelectRequest(query=query, tenant_id=tenant, dry_run=True)
            started, cpu = time.perf_counter(), time.thread_time()
            texts = selector.reads(request)  # the query's spelling repaired, as the service does ahead
            ahead, ahead_cpu = time.perf_counter() - started, time.thread_time() - cpu
            if embedder is not None:
                embedder.embed_request(texts[0], texts[1:])
            started, cpu = time.perf_counter(), time.thread_time()
            selection = selector.run(request)
            total.append((time.perf_counter() - started + ahead) * 1000)
            used.append((time.thread_time() - cpu + ahead_cpu) * 1000)
            for name in STAGES:
                stages[name].append(selection.stages_ms.get(name, 0.0) + (ahead * 1000 if name == "spelling" else 0.0))
    return {
        "in_process_ms": _percentiles(total),
        "in_process_cpu_ms": _percentiles(used),
        "stages_ms": {name: round(float(np.percentile(ms, 50)), 4) if ms else 0.0 for name, ms in stages.items()},
    }


def _percentiles(ms: list[float]) -> dict[str, float]:
    shown = np.percentile(ms, PERCENTILES) if ms else np.zeros(len(PERCENTILES))
    return {f"p{p}": round(float(v), 3) for p, v in zip(PERCENTILES, shown, strict=True)}
