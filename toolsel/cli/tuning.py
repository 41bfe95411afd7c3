"""``toolsel train-model``: fine-tune the embedding model on query → tool pairs; ``toolsel tune``: tune it from
this deployment's use (both need the ``tune`` extra)."""

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from toolsel.cli.running import FAILED, USAGE, fail, require_file, run, settings
from toolsel.cli.tools import answering_services, switch_embedding_model
from toolsel.render import console
from toolsel.settings import Settings
from toolsel.store import create_pool

if TYPE_CHECKING:
    from toolsel.evaluation.shadow import Shadow
    from toolsel.tuning.from_use import Use

StepDone = Callable[[int, int, float, float], None]

app = typer.Typer()


def positive(value: float | None, option: str) -> float | None:
    """``value`` where it is above 0, else a usage error naming ``option``."""
    if value is not None and value <= 0:
        raise typer.BadParameter("must be above 0", param_hint=option)
    return value


@app.command("train-model")
def train_model(
    pairs: Annotated[Path, typer.Argument(help="JSON lines of {query, tool_id, tool_text, group}")],
    out: Annotated[Path, typer.Option(help="directory the model and its card are written to")],
    name: Annotated[str, typer.Option(help="the model's name (TOOLSEL_EMBEDDING_MODEL)")] = "my/minilm-tools",
    leave_out: Annotated[list[str] | None, typer.Option(help="a group not trained on (repeatable)")] = None,
    max_pairs: Annotated[int, typer.Option(help="pairs trained on at most, shared fairly between the groups")] = 4000,
    manifest: Annotated[Path | None, typer.Option(help="the pairs' manifest (sources, licences) for the card")] = None,
    seed: Annotated[int, typer.Option(help="seed of the sample, the batches and the weights' updates")] = 0,
    threads: Annotated[
        int | None, typer.Option(help="torch threads (default 1: on a busy 2-core machine two wait for each other)")
    ] = None,
    epochs: Annotated[int, typer.Option(help="passes over the pairs")] = 1,
    batch_size: Annotated[
        int | None, typer.Option(min=2, help="pairs per step, each the others' negatives (default 64)")
    ] = None,
    learning_rate: Annotated[
        float | None,
        typer.Option(
            callback=lambda rate: positive(rate, "--learning-rate"), help="AdamW's peak learning rate (default 2e-5)"
        ),
    ] = None,
    base: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            file_okay=False,
            help="train from these weights (a transformers folder), not all-MiniLM-L6-v2's",
        ),
    ] = None,
    query_max_tokens: Annotated[
        int | None, typer.Option(help="queries are cut at this many tokens while training (default 64)")
    ] = None,
    tool_max_tokens: Annotated[
        int | None, typer.Option(help="tool texts are cut at this many tokens while training (default 128)")
    ] = None,
) -> None:
    """Fine-tune all-MiniLM-L6-v2 on query → tool pairs (in-batch negatives), export it to int8 ONNX, check the
    export against the torch model and write its model card. Serve it with TOOLSEL_EMBEDDING_MODEL=NAME
    TOOLSEL_MODEL_DIR=OUT."""
    for given in (pairs, manifest):
        if given is not None:
            require_file(given)
    try:
        from toolsel.tuning.build import build
        from toolsel.tuning.train import TrainSettings
    except ImportError as missing:
        fail(f"training needs the tune extra (pip install 'toolsel[tune]'): {missing}", USAGE)

    def progress(step: int, steps: int, loss: float, seconds: float) -> None:
        left = seconds / step * (steps - step)
        console.print(f"step {step}/{steps}  loss {loss:.3f}  {seconds:.0f} s, about {left:.0f} s left")

    defaults = TrainSettings()
    settings = TrainSettings(
        seed=seed,
        threads=threads,
        epochs=epochs,
        batch_size=defaults.batch_size if batch_size is None else batch_size,
        learning_rate=defaults.learning_rate if learning_rate is None else learning_rate,
        query_max_tokens=query_max_tokens or defaults.query_max_tokens,
        tool_max_tokens=tool_max_tokens or defaults.tool_max_tokens,
    )
    card = build(
        pairs,
        out,
        name=name,
        leave_out=leave_out or [],
        budget=max_pairs,
        settings=settings,
        manifest=manifest,
        progress=progress,
        base=None if base is None else (str(base), base),
    )
    console.print(
        f"{card.name} written to {out}: {card.training['pairs']} pairs, "
        f"{card.training['seconds_per_1000_pairs']} s per 1,000 pairs; export cosine {card.export['min_cosine']}"
    )


@app.command("tune")
def tune(
    dry_run: Annotated[bool, typer.Option(help="train and compare, never switch")] = False,
    seed: Annotated[int, typer.Option(help="seed of the batches and the weights' updates")] = 0,
    epochs: Annotated[
        int | None, typer.Option(min=1, help="passes over the pairs (default TOOLSEL_TUNE_EPOCHS)")
    ] = None,
    learning_rate: Annotated[
        float | None,
        typer.Option(
            callback=lambda rate: positive(rate, "--learning-rate"),
            help="AdamW's learning rate (default TOOLSEL_TUNE_LEARNING_RATE)",
        ),
    ] = None,
    threads: Annotated[int | None, typer.Option(help="torch threads (default TOOLSEL_TUNE_THREADS)")] = None,
) -> None:
    """Tune the embedding model from this deployment's use: its selections' successful calls and reviews become
    query → tool pairs (shared tools only, each tenant's share bounded), a candidate is trained from the current
    model, measured against it on the most recent selections held back, and switched to (the store re-embedded)
    only when it wins by TOOLSEL_TUNE_MARGIN. Runs at low priority beside a serving stack."""
    try:
        from toolsel.evaluation import shadow as shadows
        from toolsel.tuning import tune as stages
        from toolsel.tuning.train import TrainSettings
    except ImportError:
        fail("toolsel tune needs the tune extra: pip install 'toolsel[tune]'", USAGE)
    os.nice(settings().tune_niceness)
    train = TrainSettings(
        seed=seed,
        epochs=epochs or settings().tune_epochs,
        learning_rate=learning_rate or settings().tune_learning_rate,
        threads=threads or settings().tune_threads,
    )
    current = settings().model_copy(update={"embedding_threads": train.threads})
    found, serving = _read_use(current)
    chosen = stages.split(found, current)
    console.print(
        f"{len(found.evidence)} outcome and review verdicts; {len(chosen.pairs)} pairs from "
        f"{len(chosen.by_tenant)} tenants ({chosen.left_out_private} selections left out for touching a private"
        f" tool); {len(chosen.held_out)} most recent queries held back"
    )
    if len(chosen.pairs) < 2 or not chosen.held_out:
        fail("too little use to tune on: at least 2 pairs and 1 held-back query are needed", FAILED)
    try:
        base = stages.current_weights(current)
    except stages.NoWeights as missing:
        fail(str(missing), USAGE)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    name, out = f"toolsel/tuned-{stamp}", current.home / "tuned" / stamp
    console.print(f"training {name} from {base[0]} on {len(chosen.pairs)} pairs ({train.threads} torch threads)")
    with _steps() as advance:
        stages.train_candidate(chosen, current, out, name, train, advance)
    candidate = stages.as_served(current, name, out)
    shadow = run(lambda: shadows.shadow_test(current, candidate, chosen, found))
    shadows.record(out, shadow)
    _print_shadow(shadow, current.embedding_model, name)
    if dry_run or not shadow.wins:
        stages.discard(out)
        why = "--dry-run" if dry_run else f"the candidate does not beat the current model by {shadow.margin}"
        console.print(f"kept {current.embedding_model} ({why}); the candidate was discarded")
        return
    env = f"TOOLSEL_EMBEDDING_MODEL={name} TOOLSEL_MODEL_DIR={out}"
    if serving:
        console.print(
            f"{name} written to {out}. Services are running: stop them, run `{env} toolsel indexer"
            " --switch-model`, then start them with these two settings"
        )
        return
    switch_embedding_model(candidate)
    console.print(f"start the services with {env} (they refuse the previous model now)")


def _read_use(current: Settings) -> tuple["Use", bool]:
    """What the store holds for a tune, and whether services may be running beside it: from TOOLSEL_DATABASE_URL,
    a running stack's database, or a stopped stack's (started for the read)."""
    from toolsel.services.indexer.hashing import embedding_text, stored_spec
    from toolsel.stack import StackRunning, running_stack, stopped_stack_database
    from toolsel.tuning.tune import read_use

    def text_of(spec: dict[str, object]) -> str:
        return embedding_text(stored_spec(spec))

    async def read(url: str) -> "Use":
        pool = await create_pool(url)
        try:
            return await read_use(pool, text_of, current.learning_credits_window_s)
        finally:
            await pool.close()

    if current.database_url:
        return run(lambda: read(str(current.database_url))), bool(current.nats_url and run(answering_services))
    if (stack := running_stack(current.home)) is not None:
        return run(lambda: read(stack.database_url)), True
    try:
        with stopped_stack_database(current.home) as url:
            return run(lambda: read(url)), False
    except StackRunning:  # started meanwhile
        fail("a stack started while the tune read its store: run the tune again", FAILED)


@contextmanager
def _steps() -> Iterator[StepDone]:
    """A progress bar over the training steps, with the time left."""
    columns = (TextColumn("training"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"))
    with RichProgress(*columns, TimeElapsedColumn(), TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("training", total=None, loss="-")

        def advance(step: int, steps: int, loss: float, seconds: float) -> None:
            bar.update(task, completed=step, total=steps, loss=f"{loss:.3f}")

        yield advance
    console.print("exporting to int8 ONNX and checking the export")


def _print_shadow(shadow: "Shadow", current: str, candidate: str) -> None:
    table = Table(title=f"held-back queries: {shadow.current.queries}")
    for column in ("model", "R@5", "NDCG@10"):
        table.add_column(column)
    for name, figures in ((current, shadow.current), (candidate, shadow.candidate)):
        table.add_row(name, f"{figures.r5:.3f}", f"{figures.ndcg10:.3f}")
    console.print(table)
