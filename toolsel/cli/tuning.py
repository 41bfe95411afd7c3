"""``toolsel train-model``: fine-tune the embedding model on query → tool pairs (needs the ``tune`` extra)."""

from pathlib import Path
from typing import Annotated

import typer

from toolsel.render import console

app = typer.Typer()


@app.command("train-model")
def train_model(
    pairs: Annotated[Path, typer.Argument(help="JSON lines of {query, tool_id, tool_text, group}")],
    out: Annotated[Path, typer.Option(help="directory the model and its card are written to")],
    name: Annotated[str, typer.Option(help="the model's name (TOOLSEL_EMBEDDING_MODEL)")] = "toolsel/minilm-tools",
    leave_out: Annotated[list[str] | None, typer.Option(help="a group not trained on (repeatable)")] = None,
    max_pairs: Annotated[int, typer.Option(help="pairs trained on at most, shared fairly between the groups")] = 4000,
    manifest: Annotated[Path | None, typer.Option(help="the pairs' manifest (sources, licences) for the card")] = None,
    seed: Annotated[int, typer.Option(help="seed of the sample, the batches and the weights' updates")] = 0,
    threads: Annotated[
        int | None, typer.Option(help="torch threads (default 1: on a busy 2-core machine two wait for each other)")
    ] = None,
    epochs: Annotated[int, typer.Option(help="passes over the pairs")] = 1,
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
    try:
        from toolsel.tuning.build import build
        from toolsel.tuning.train import TrainSettings
    except ImportError as missing:
        console.print(f"[red]training needs the tune extra (pip install 'toolsel\\[tune]'): {missing}[/]")
        raise typer.Exit(2) from None

    def progress(step: int, steps: int, loss: float, seconds: float) -> None:
        left = seconds / step * (steps - step)
        console.print(f"step {step}/{steps}  loss {loss:.3f}  {seconds:.0f} s, about {left:.0f} s left")

    defaults = TrainSettings()
    settings = TrainSettings(
        seed=seed,
        threads=threads,
        epochs=epochs,
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
    )
    console.print(
        f"{card.name} written to {out}: {card.training['pairs']} pairs, "
        f"{card.training['seconds_per_1000_pairs']} s per 1,000 pairs; export cosine {card.export['min_cosine']}"
    )
