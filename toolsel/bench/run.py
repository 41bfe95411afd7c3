"""Run the benchmark against its own embedded stack in a temporary home, through the client, like a user would."""

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolsel.bench.catalog import bench_queries, catalog_of, interleaved, pooled_sets
from toolsel.bench.load import Load, in_own_process, throughput
from toolsel.bench.stats import percentiles_ms, rate, rss_mb
from toolsel.client import ToolselClient
from toolsel.embedder import load_embedder
from toolsel.evaluation.dataset import catalog_syncs, wire_names
from toolsel.evaluation.ranking import load_catalog
from toolsel.settings import Settings
from toolsel.stack import Stack, temporary_stack
from toolsel.waiting import eventually

TENANT = "bench"
PLUGIN_PREFIX = "bench"
REPEATED = 20
"""Distinct queries cycled for the repeated-query latency (the selector's caches then answer)."""
REFERENCE_SAMPLES = 100
BATCH_TEXTS = 256
IN_FLIGHT = 16
"""Requests outstanding while throughput is measured."""
QUERY_SEED = 0
"""Seed of each set's query order (``interleaved``): every run times the same queries."""
THROUGHPUT_ROUNDS = 4
"""Each throughput measure is timed over this many times ``--requests`` selects, after ``--requests`` to warm up."""
SECOND_SELECTOR_S = 300.0
"""How long the second selector may take to load the catalog."""


InProcess = Callable[[Settings, str, str, Sequence[str]], Awaitable[dict[str, Any]]]
"""Times a selection in process on the stack's catalog, without the query embedding: (settings, database URL,
tenant, queries) -> ``in_process_ms`` and ``stages_ms`` (the selector's ``timings.in_process``, handed in by the
CLI: the bench runs beneath the services)."""


@dataclass(frozen=True)
class Options:
    data: Path
    sizes: Sequence[int]
    requests: int = 300


def reference_costs(
    settings: Settings, queries: Sequence[str], home: Path
) -> tuple[dict[str, float], dict[str, float]]:
    """One query embedding in this process (p50, no cache) and the model's batch rate, same settings as the
    services: the floor under a select and the ceiling over a sync; and each query's own embedding time, so that
    a select's overhead is measured against the embedding of the same query (their lengths vary tenfold)."""
    embedder = load_embedder(
        settings.model_dir,
        home,
        threads=settings.embedding_threads,
        workers=1,  # fastembed's own rate, one call after another: the sync's may exceed it with more workers
        batch_size=settings.embedding_batch_size,
        batch_tokens=settings.embedding_batch_tokens,
        cache_size=0,
        model_name=settings.embedding_model,
    )
    embedder.embed(["warm up"])
    each: dict[str, float] = {}
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        each[query] = time.perf_counter() - started
    batch = list(queries[:BATCH_TEXTS])
    started = time.perf_counter()
    embedder.embed(batch)
    reference = {
        "embed_query_p50_ms": percentiles_ms(list(each.values())[:REFERENCE_SAMPLES], (50,))["p50"],
        "batch_texts_per_s": rate(len(batch), time.perf_counter() - started),
    }
    return reference, each


async def round_trip_p50(client: ToolselClient) -> float:
    """A health request to the indexer: a NATS round trip through a service that does no work."""
    samples = []
    for _ in range(REFERENCE_SAMPLES):
        started = time.perf_counter()
        await client.health("indexer")
        samples.append(time.perf_counter() - started)
    return percentiles_ms(samples, (50,))["p50"]


async def proc_status(pid: int) -> str:
    return await asyncio.to_thread(Path(f"/proc/{pid}/status").read_text)


async def embedding_s(client: ToolselClient) -> float:
    """Seconds the indexer has spent in the model since it started (its health reply counts them)."""
    return float((await client.health("indexer")).details["embedding_s"])


async def measure_size(
    client: ToolselClient, tools: list[Any], queries: Sequence[str], pids: dict[str, int], embed_s: dict[str, float]
) -> dict[str, Any]:
    """Grow the catalog to ``len(tools)`` tools (a sync embeds what is new), then time selects against it; the
    overhead is each select's time less its own query's embedding (``embed_s``), p50 and p99, less a round trip;
    the part of it in the selector, each reply's ``latency_ms`` less the same embedding."""
    names = wire_names([t.name for t in tools])
    syncs = catalog_syncs(tools, names, PLUGIN_PREFIX, TENANT)
    model_s = await embedding_s(client)
    started, embedded, write_s = time.perf_counter(), 0, 0.0
    for sync in syncs:
        report = await client.sync(sync)
        embedded += report.embedded
        write_s += report.write_ms / 1000
    sync_s = time.perf_counter() - started
    model_s = await embedding_s(client) - model_s
    indexer = await proc_status(pids["indexer"])
    await load_catalog(client, syncs, names)
    uncached, inside = [], []
    for query in queries:
        started = time.perf_counter()
        reply = await client.select(query=query, tenant_id=TENANT, dry_run=True)
        uncached.append(time.perf_counter() - started)
        inside.append(reply.latency_ms / 1000)
    repeated = []
    for i in range(len(queries) + REPEATED):
        started = time.perf_counter()
        await client.select(query=queries[i % REPEATED], tenant_id=TENANT, dry_run=True)
        repeated.append(time.perf_counter() - started)
    status = await proc_status(pids["selector"])
    less_embedding = [u - embed_s[q] for u, q in zip(uncached, queries, strict=True)]
    inside_less = [i - embed_s[q] for i, q in zip(inside, queries, strict=True)]
    return {
        "tools": len(tools),
        "select_uncached_ms": percentiles_ms(uncached),
        **{f"select_less_embedding_{p}_ms": ms for p, ms in percentiles_ms(less_embedding, (50, 99)).items()},
        **{f"overhead_in_selector_{p}_ms": ms for p, ms in percentiles_ms(inside_less, (50, 99)).items()},
        "selector_inside_p50_ms": percentiles_ms(inside, (50,))["p50"],
        "selector_inside_ms": percentiles_ms(inside),
        "select_repeated_p50_ms": percentiles_ms(repeated[REPEATED:], (50,))["p50"],
        "selector_rss_mb": rss_mb(status),
        "sync_embedded": embedded,
        "sync_s": round(sync_s, 2),
        "sync_tools_per_s": rate(embedded, sync_s),
        "sync_write_s": round(write_s, 2),
        "sync_embed_s": round(sync_s - write_s, 2),
        "sync_model_s": round(model_s, 2),
        "sync_of_model_rate": round(model_s / sync_s, 2) if sync_s > 0 else 0.0,
        "indexer_rss_mb": rss_mb(indexer),
        "indexer_peak_rss_mb": rss_mb(indexer, "VmHWM"),
    }


async def second_selector_ready(client: ToolselClient, tools: int, first_selections: int) -> None:
    """Until a selector that has answered fewer selects than the first one had (so: the new one) reports the
    whole catalog loaded. Health requests go to either copy (one queue group), so this asks until it hears it."""

    async def loaded() -> bool:
        try:
            details = (await client.health("selector")).details
        except Exception:  # the new copy may not answer yet; the next request may reach the other
            return False
        return details.get("tools") == tools and int(details.get("selections", first_selections)) < first_selections

    if await eventually(loaded, SECOND_SELECTOR_S):
        return
    raise RuntimeError(f"a second selector did not load {tools} tools in {SECOND_SELECTOR_S:.0f} s")


async def measure_throughput(
    stack: Stack, client: ToolselClient, nats_url: str, tools: int, queries: Sequence[str]
) -> dict[str, Any]:
    """Selects per second with IN_FLIGHT outstanding, from a client in its own process: one selector, then two (a
    second started on the same stack: copies share requests as one queue group), then one again, so that the
    machine's changing load weighs on both alike; fresh queries each time. Beside each rate, the selects' times as
    their callers waited under that load (ms p50/p95/p99)."""
    third = len(queries) // 3
    warm = third // (THROUGHPUT_ROUNDS + 1)
    rounds = [(queries[i * third : i * third + warm], queries[i * third + warm : (i + 1) * third]) for i in range(3)]

    async def measure(round_: int) -> Load:
        return await in_own_process(throughput, nats_url, TENANT, *rounds[round_], IN_FLIGHT)

    before = await measure(0)
    first_selections = int((await client.health("selector")).details["selections"])
    second = stack.spawn("selector", log_name="selector-2")
    try:
        await second_selector_ready(client, tools, first_selections)
        two = await measure(1)
    finally:
        second.terminate()
        await asyncio.to_thread(second.wait)
    after = await measure(2)
    one = round((before.per_s + after.per_s) / 2, 1)
    return {
        "tools": tools,
        "in_flight": IN_FLIGHT,
        "requests": third - warm,
        "one_selector_per_s": one,
        "one_selector_before_after_per_s": [before.per_s, after.per_s],
        "one_selector_select_ms": percentiles_ms([*before.waited_s, *after.waited_s]),
        "two_selectors_per_s": two.per_s,
        "two_selectors_select_ms": percentiles_ms(two.waited_s),
        "two_over_one": round(two.per_s / one, 2) if one else 0.0,
    }


async def run_bench(options: Options, in_process: InProcess | None = None) -> dict[str, Any]:
    """Reference costs, then each size in increasing order on one stack: every number comes from the same run;
    with ``in_process``, each size's selection in process too, on the same queries."""
    sets = pooled_sets(options.data)
    pool = [t for s in sets for t in s.tools]
    sizes = sorted(options.sizes)
    n = options.requests
    timed = n * len(sizes)
    loaded = 3 * n * (THROUGHPUT_ROUNDS + 1)
    texts = interleaved([[q.text for q in s.queries] for s in sets], QUERY_SEED)
    queries = bench_queries(texts, timed + loaded)
    costs: list[tuple[dict[str, float], dict[str, float]]] = []

    async def model_alone(settings: Settings) -> None:
        """The reference costs, measured in the stack's home before its services start (and load the model)."""
        costs.append(
            await asyncio.to_thread(reference_costs, settings, queries[: max(timed, BATCH_TEXTS)], settings.home)
        )

    async with temporary_stack({}, "toolsel-bench-", before_start=model_alone) as (endpoints, stack):
        settings = stack.settings
        reference, embed_s = costs[0]
        async with ToolselClient(endpoints.nats_url, timeout_s=60) as client:
            reference["round_trip_p50_ms"] = await round_trip_p50(client)
            pids = {name: stack.services[name].pid for name in ("selector", "indexer")}
            measured = []
            for i, tools in enumerate(sizes):  # each size its own queries: none is already in the selector's cache
                own = queries[i * n : (i + 1) * n]
                measured.append(await measure_size(client, catalog_of(pool, tools), own, pids, embed_s))
                if in_process is not None:
                    measured[-1].update(await in_process(settings, endpoints.database_url, TENANT, own))
            scaling = await measure_throughput(stack, client, endpoints.nats_url, sizes[-1], queries[timed:])
    batch = reference["batch_texts_per_s"]
    for size in measured:
        for p in ("p50", "p99"):  # the p99 ≤ 2 × p50 asked of the overhead itself, apart from the query
            size[f"overhead_{p}_ms"] = round(
                size.pop(f"select_less_embedding_{p}_ms") - reference["round_trip_p50_ms"], 2
            )
        size["sync_of_batch_rate"] = round(size["sync_tools_per_s"] / batch, 2) if batch else 0.0
    return {
        "sets": [s.name for s in sets],
        "requests": options.requests,
        "reference": reference,
        "sizes": measured,
        "throughput": scaling,
    }
