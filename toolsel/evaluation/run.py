"""``toolsel eval``: run an offline or online evaluation of one set against a real stack."""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from toolsel.client import ToolselClient
from toolsel.evaluation import online
from toolsel.evaluation.dataset import BenchSet, catalog_syncs, load_set, subset_fields, wire_names
from toolsel.evaluation.metrics import DEPTH
from toolsel.evaluation.offline import Mode, plan_modes, score
from toolsel.evaluation.ranking import BenchCatalog, load_catalog, rank
from toolsel.evaluation.session import nats_url
from toolsel.evaluation.split import sample, split_queries
from toolsel.render import console
from toolsel.settings import Settings

OFFLINE_ENV = {"TOOLSEL_THOMPSON_SAMPLING": "false", "TOOLSEL_QUERY_CACHE_SIZE": "100000"}
ONLINE_ENV = {"TOOLSEL_QUERY_CACHE_SIZE": "100000", "TOOLSEL_REVIEW_INDEX_REFRESH_S": "1"}


@dataclass(frozen=True)
class Options:
    path: Path
    train_fraction: float = 0.0
    seed: int = 0
    max_queries: int = 2000
    online: bool = False
    events: int = 2000
    every: int = 250
    holdout: int = 200
    settle_s: float = 1.5
    out: Path = Path("eval-out")


@contextmanager
def _progress() -> Iterator[Progress]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, TimeRemainingColumn(), console=console, transient=False) as progress:
        yield progress


def _advance(progress: Progress, description: str, total: int) -> Callable[[int], None]:
    task = progress.add_task(description, total=total)
    return lambda n: progress.advance(task, n)


def _services_settings() -> dict[str, Any]:
    """The selection and learning settings in force (as this process reads the environment)."""
    hidden = {"home", "nats_url", "database_url", "model_dir", "plugin_secrets"}
    return Settings().model_dump(mode="json", exclude=hidden)


async def _catalog(client: ToolselClient, bench: BenchSet, prefix: str, tenant: str, examples: Any) -> BenchCatalog:
    names = wire_names([t.name for t in bench.tools])
    with console.status(f"syncing and embedding {len(bench.tools)} tools ({prefix})"):
        return await load_catalog(client, catalog_syncs(bench.tools, names, prefix, tenant, examples), names)


async def run_offline(options: Options) -> dict[str, Any]:
    """Every mode on the (sampled) evaluation queries; the result holds every number and the settings."""
    bench = load_set(options.path)
    split = split_queries(bench.queries, options.train_fraction, options.seed)
    queries = sample(split.evaluate, options.max_queries, options.seed)
    fields = subset_fields(queries)
    modes = plan_modes(bool(split.train))
    split_text = split.describe(options.train_fraction, options.seed)
    sampled = f"; a seeded sample of {len(queries)} of them" if len(queries) < len(split.evaluate) else ""
    console.print(f"[bold]{bench.name}[/]: {len(bench.tools)} tools. Split: {split_text}{sampled}.")
    run = uuid4().hex[:8]
    result: dict[str, Any] = {"set": bench.name, "path": str(options.path), "queries_evaluated": len(queries)}
    async with nats_url(OFFLINE_ENV) as (url, own_stack), ToolselClient(url, timeout_s=60) as client:
        catalogs: dict[str, BenchCatalog] = {}
        modes_out: dict[str, Any] = {}
        with _progress() as progress:
            for mode in modes:
                if mode.catalog not in catalogs:
                    examples = split.examples if mode.catalog == "examples" else None
                    catalogs[mode.catalog] = await _catalog(
                        client, bench, f"eval-{run}-{mode.catalog}", f"eval-{run}", examples
                    )
                started = time.perf_counter()
                rankings = await rank(
                    client,
                    catalogs[mode.catalog],
                    queries,
                    retrieval=mode.retrieval,
                    rerank=mode.rerank,
                    k=DEPTH,
                    seed=options.seed,
                    advance=_advance(progress, mode.name, len(queries)),
                )
                modes_out[mode.name] = {**score(rankings, queries, fields), "seconds": time.perf_counter() - started}
        result["settings"] = _settings(options, modes, own_stack)
    result["split"] = {
        "description": split_text,
        "train_queries": len(split.train),
        "evaluation_queries": len(split.evaluate),
        "sampled": len(queries),
        "overlap_dropped": split.overlap_dropped,
        "examples_capped": split.capped,
        "queries_without_known_tools": bench.dropped_queries,
    }
    result["subset_fields"] = fields
    result["modes"] = modes_out
    result["baselines"] = bench.baselines
    return result


def _settings(options: Options, modes: list[Mode], own_stack: bool) -> dict[str, Any]:
    return {
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
        "depth": DEPTH,
        "modes": [asdict(m) for m in modes],
        "own_stack": own_stack,
        "stack_env": (ONLINE_ENV if options.online else OFFLINE_ENV) if own_stack else {},
        "services": _services_settings(),
    }


async def run_online(options: Options) -> dict[str, Any]:
    """Stream ``events`` queries through select → outcome → review; the curve on the held-out slice."""
    bench = load_set(options.path)
    holdout, pool = online.holdout_split(bench.queries, options.holdout, options.seed)
    queries = online.stream(pool, options.events)
    console.print(
        f"[bold]{bench.name}[/]: {len(bench.tools)} tools described by their text only; seed {options.seed}: "
        f"{len(holdout)} held-out queries (never streamed), {len(queries)} events from the other {len(pool)}"
        f"{' (cycled)' if len(queries) > len(pool) else ''}; measured every {options.every} events."
    )
    run = uuid4().hex[:8]
    async with nats_url(ONLINE_ENV) as (url, own_stack), ToolselClient(url, timeout_s=60) as client:
        catalog = await _catalog(client, bench, f"eval-{run}-online", f"eval-{run}", None)
        with _progress() as progress:
            curve = await online.learn(
                client,
                catalog,
                holdout,
                queries,
                every=options.every,
                seed=options.seed,
                settle_s=options.settle_s,
                advance=_advance(progress, "events", len(queries)),
            )
        settings = _settings(options, [], own_stack)
    return {
        "set": bench.name,
        "path": str(options.path),
        "settings": settings,
        "holdout": len(holdout),
        "events": len(queries),
        "curve": [asdict(p) for p in curve],
    }
