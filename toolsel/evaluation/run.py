"""``toolsel eval``: run an offline or online evaluation of one set against a real stack."""

import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal
from uuid import uuid4

import asyncpg
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from toolsel.client import ToolselClient
from toolsel.embedded import redacted
from toolsel.embedder import MODEL_NAME, packaged_model_dir
from toolsel.errors import NoStack
from toolsel.evaluation import online, scenarios
from toolsel.evaluation.calibration import calibration
from toolsel.evaluation.dataset import Query, load_set, subset_fields
from toolsel.evaluation.metrics import DEPTH
from toolsel.evaluation.offline import ANSWER_SIZES, Mode, answer_size, plan_modes, score
from toolsel.evaluation.plan import Scenario
from toolsel.evaluation.ranking import BenchCatalog, rank, sync_catalog
from toolsel.evaluation.session import servers
from toolsel.evaluation.split import sample, split_queries
from toolsel.render import console
from toolsel.settings import ENV_PREFIX, Settings
from toolsel.stack import Endpoints
from toolsel.store import space
from toolsel.tuning.card import read_card

REQUEST_TIMEOUT_S = 600
"""A sync answers once its tools are embedded: thousands of tools on a busy 2-core machine take minutes."""
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
    scenario: Scenario = "stream"
    drift_at: int | None = None
    recover_at: int | None = None
    add_at: int | None = None
    answer_sizes: bool = False


@contextmanager
def _progress() -> Iterator[Progress]:
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, TimeRemainingColumn(), console=console, transient=False) as progress:
        yield progress


def _advance(progress: Progress, description: str, total: int) -> Callable[[int], None]:
    task = progress.add_task(description, total=total)
    return lambda n: progress.advance(task, n)


def model_used(settings: Settings, served: str) -> dict[str, Any]:
    """The model that made the numbers, ``served``, and the evaluation sets whose queries it was trained on, from
    the model card in TOOLSEL_MODEL_DIR (else the packaged model's) only when the card is of that very model: None
    (unknown, so no number is known to be cold) without one, as against servers set for another model than this
    process; none for the stock model, published before every set."""
    if served == MODEL_NAME and settings.model_dir is None:
        return {"name": served, "trained_on": []}
    directory = settings.model_dir or packaged_model_dir(served)
    card = read_card(directory) if directory is not None else None
    return {"name": served, "trained_on": card.trained_on if card is not None and card.name == served else None}


async def served_model(endpoints: Endpoints) -> str:
    """The model the servers' store records (``embedding_space``): every service checks its own against it when it
    starts, so it is the one that embedded the tools and the queries, whatever this process's settings say."""
    where = redacted(endpoints.database_url)
    try:
        found = await space.recorded_at(endpoints.database_url)
    except (OSError, asyncpg.PostgresError) as error:
        raise NoStack.saying(f"cannot read the servers' embedding model from PostgreSQL at {where}: {error}") from error
    if found is None:
        raise NoStack.saying(f"the store at {where} records no embedding model: no service has started on it")
    return found[0]


def services_settings(stack_env: Mapping[str, str]) -> dict[str, Any]:
    """The selection and learning settings the services run with: this process's environment and, over it,
    ``stack_env``, what the eval sets for a stack it starts itself (on configured servers, what this process reads:
    theirs may differ)."""
    hidden = {"home", "nats_url", "database_url", "model_dir", "plugin_secrets"}
    given: dict[str, Any] = {name.removeprefix(ENV_PREFIX).lower(): value for name, value in stack_env.items()}
    return Settings(**given).model_dump(mode="json", exclude=hidden)


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
    if note := bench.labels_note():
        console.print(note)
    run = uuid4().hex[:8]
    result: dict[str, Any] = {"set": bench.name, "path": str(options.path), "queries_evaluated": len(queries)}
    async with (
        servers(OFFLINE_ENV) as (endpoints, stack),
        ToolselClient(endpoints.nats_url, timeout_s=REQUEST_TIMEOUT_S) as client,
        _catalogs(client, removed=stack is None) as catalogs,
    ):
        own_stack = stack is not None
        result["model"] = model_used(Settings(), await served_model(endpoints))
        modes_out: dict[str, Any] = {}
        with _progress() as progress:
            for mode in modes:
                if mode.catalog not in catalogs:
                    examples = split.examples if mode.catalog == "examples" else None
                    catalogs[mode.catalog] = await sync_catalog(
                        client, bench.tools, f"eval-{run}-{mode.catalog}", f"eval-{run}", examples
                    )
                started = time.perf_counter()
                sure: list[list[float]] = []
                rankings = await rank(
                    client,
                    catalogs[mode.catalog],
                    queries,
                    retrieval=mode.retrieval,
                    rerank=mode.rerank,
                    k=DEPTH,
                    seed=options.seed,
                    advance=_advance(progress, mode.name, len(queries)),
                    confidences=sure,
                )
                modes_out[mode.name] = {**score(rankings, queries, fields), "seconds": time.perf_counter() - started}
                if mode.rerank:
                    result["calibration"] = _calibration(rankings, sure, queries)
            if options.answer_sizes:
                full = catalogs[modes[-1].catalog]
                result["answer_sizes"] = {
                    str(size): await _answers(client, full, queries, size, options.seed, progress)
                    for size in ANSWER_SIZES
                }
        result["settings"] = _settings(options, modes, own_stack)
    result["split"] = {
        "description": split_text,
        "train_queries": len(split.train),
        "evaluation_queries": len(split.evaluate),
        "sampled": len(queries),
        "overlap_dropped": split.overlap_dropped,
        "examples_capped": split.capped,
        **bench.label_counts(),
    }
    result["subset_fields"] = fields
    result["modes"] = modes_out
    result["baselines"] = bench.baselines
    return result


async def _answers(
    client: ToolselClient,
    catalog: BenchCatalog,
    queries: list[Query],
    k: int | Literal["auto"],
    seed: int,
    progress: Progress,
) -> dict[str, float]:
    """The full pipeline's whole answers at one size (``k``: a number or auto)."""
    whole: list[tuple[int, int]] = []
    advance = _advance(progress, f"answers, k={k}", len(queries))
    got = await rank(
        client, catalog, queries, retrieval="hybrid", rerank=True, k=k, seed=seed, advance=advance, answers=whole
    )
    return answer_size(got, whole, queries)


@asynccontextmanager
async def _catalogs(client: ToolselClient, removed: bool) -> AsyncIterator[dict[str, BenchCatalog]]:
    """The run's synced catalogs, by kind; ``removed`` (configured servers) when it ends: those servers keep what is
    synced, and every tenant's BM25 statistics count it, so a later run would rank beside this one's copies."""
    catalogs: dict[str, BenchCatalog] = {}
    try:
        yield catalogs
    finally:
        if removed:
            for catalog in catalogs.values():
                for plugin in catalog.plugins:
                    await client.remove_plugin(plugin, catalog.tenant_id)


def _calibration(rankings: list[list[str]], sure: list[list[float]], queries: list[Query]) -> dict[str, Any]:
    """How well the full pipeline's confidence predicts relevance over the returned top DEPTH of every query."""
    flat = [
        (p, name in q.relevant)
        for names, ps, q in zip(rankings, sure, queries, strict=True)
        for name, p in zip(names[:DEPTH], ps[:DEPTH], strict=True)
    ]
    return calibration([p for p, _ in flat], [hit for _, hit in flat])


def _settings(options: Options, modes: list[Mode], own_stack: bool) -> dict[str, Any]:
    return {
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
        "depth": DEPTH,
        "modes": [asdict(m) for m in modes],
        "own_stack": own_stack,
        "stack_env": _stack_env(options) if own_stack else {},
        "services": services_settings(_stack_env(options) if own_stack else {}),
    }


def _stack_env(options: Options) -> dict[str, str]:
    """The environment of the services when the eval starts its own stack."""
    if not options.online:
        return OFFLINE_ENV
    return {**ONLINE_ENV, **scenarios.QUARANTINE_ENV} if options.scenario == "drift" else ONLINE_ENV


async def _scenario(stage: scenarios.Stage, options: Options, stack_env: dict[str, str]) -> scenarios.Outcome:
    match options.scenario:
        case "stream":
            return await scenarios.stream(stage)
        case "drift":
            return await scenarios.drift(stage, options.drift_at, options.recover_at, stack_env)
        case "new-tool":
            return await scenarios.new_tool(stage, options.add_at)
        case "tenants":
            return await scenarios.tenants(stage)
        case "tune":
            return await scenarios.tune(stage)


async def run_online(options: Options) -> dict[str, Any]:
    """Stream ``events`` queries through select → outcome → review in the chosen scenario; the held-out curve and
    what the scenario measured."""
    bench = load_set(options.path)
    holdout, pool, overlap = online.holdout_split(bench.queries, options.holdout, options.seed)
    queries = online.stream(pool, options.events)
    console.print(
        f"[bold]{bench.name}[/] ({options.scenario}): {len(bench.tools)} tools described by their text only; "
        f"seed {options.seed}: {len(holdout)} held-out queries (never streamed, nor is their text: {overlap} others "
        f"of the same text left out), {len(queries)} events from the other {len(pool)}"
        f"{' (cycled)' if len(queries) > len(pool) else ''}; measured every {options.every} events."
    )
    if note := bench.labels_note():
        console.print(note)
    stack_env = _stack_env(options)
    async with servers(stack_env) as (endpoints, stack), ToolselClient(endpoints.nats_url, timeout_s=60) as client:
        own_stack = stack is not None
        model = model_used(Settings(), await served_model(endpoints))
        with _progress() as progress:
            stage = scenarios.Stage(
                client,
                bench,
                holdout,
                queries,
                options.every,
                options.seed,
                options.settle_s,
                uuid4().hex[:8],
                _advance(progress, "events", len(queries)),
                stack,
            )
            outcome = await _scenario(stage, options, stack_env if own_stack else {})
        settings = _settings(options, [], own_stack)
    return {
        "set": bench.name,
        "path": str(options.path),
        "model": model,
        "settings": settings,
        "holdout": len(holdout),
        "overlap_dropped": overlap,
        **bench.label_counts(),
        "events": len(queries),
        "curve": [asdict(p) for p in outcome.curve],
        "discovery": outcome.discovery,
        "scenario": {
            "name": options.scenario,
            **outcome.details,
            "marks": outcome.marks,
            "sightings": [asdict(s) for s in outcome.sightings],
        },
    }
