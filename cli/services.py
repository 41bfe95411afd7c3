"""Service commands: ``selector``, ``learner`` and ``indexer`` each run one service process (``toolsel up``
starts them this way, with ``python -m cli.services``); the CLI is the one place that builds a service app from
the settings. Each command imports its service only when it runs, so the other commands start without loading
the services."""

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Annotated

import typer
from faststream import FastStream

from cli.running import settings
from toolsel.settings import Settings

app = typer.Typer()


def serve(create_app: Callable[[Settings], FastStream]) -> None:
    """Build one service's app from the environment's settings and run it until it is stopped."""
    from threadpoolctl import threadpool_limits

    current = settings()
    threadpool_limits(current.blas_threads, user_api="blas")
    logging.basicConfig(level=current.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(create_app(current).run())


@app.command()
def selector() -> None:
    """Run a selector (more copies share the load through a queue group)."""
    from services.selector.app import create_app

    serve(create_app)


@app.command()
def learner(
    rebuild: Annotated[
        bool, typer.Option(help="recompute posteriors and quality from the stored event history, then exit")
    ] = False,
) -> None:
    """Run a learner (more copies share the durable consumers)."""
    if rebuild:
        from cli.learning import rebuild_from_history

        rebuild_from_history()
        return
    from services.learner.app import create_app

    serve(create_app)


@app.command()
def indexer(
    switch_model: Annotated[
        bool,
        typer.Option(
            help="make the configured embedding model the store's: drop the previous model's vectors (the tools',"
            " the reviews', those learnt from use), embed every tool with this one, then exit; stop the services first"
        ),
    ] = False,
) -> None:
    """Run an indexer."""
    if switch_model:
        from cli.tools import switch_embedding_model

        switch_embedding_model()
        return
    from services.indexer.app import create_app

    serve(create_app)


if __name__ == "__main__":
    app()
