"""Service commands: ``selector``, ``learner`` and ``indexer`` each run one service process, ``dashboard`` the
operators' dashboard and HTTP admin API (``toolsel up`` starts them this way, with ``python -m
toolsel.cli.services``); the CLI is the one place that builds a service app from
the settings. Each command imports its service only when it runs, so the other commands start without loading
the services. With ``--health`` a service command asks the copy running on this host instead (compose's health
checks)."""

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Annotated

import typer
from faststream import FastStream

from toolsel.cli.running import NO_DATABASE, NO_STACK, USAGE, fail, operator_token, running_endpoints, settings
from toolsel.contracts import HealthReply, subjects
from toolsel.embedder import ModelUnavailable
from toolsel.embedding_space import ModelMismatch
from toolsel.settings import Settings
from toolsel.stack import PROBE_S, running_stack, why_down

app = typer.Typer(pretty_exceptions_enable=False)
"""Run as ``python -m toolsel.cli.services``, without the one-line errors of ``toolsel``'s own entry: an unexpected
error is a plain traceback in the service's log, not a box of source cut to fit a terminal."""
REFUSALS = (ModelMismatch, ModelUnavailable)
"""Why a service refuses to start with these settings: said in one line, the fix in it, not as a traceback."""

OWN_HEALTH_S = 5.0
"""How long ``--health`` waits for this host's copy to answer (compose gives the whole check 10 s)."""
Health = Annotated[
    bool,
    typer.Option(
        "--health",
        help="instead of serving, ask the copy running on this host (in a container, this container's) on its own"
        " health subject, print its health reply and exit; 1 when it does not answer (compose's health checks)",
    ),
]


def own_health(service: str) -> None:
    """``toolsel SERVICE --health``: the health reply of the copy of ``service`` on this host, asked on its own
    subject (``toolsel.rpc.health.<service>.<instance>``), never the queue group's, where another copy could
    answer for a hung one; exit 1 when it does not answer within ``OWN_HEALTH_S``."""
    from toolsel.client import ToolselClient
    from toolsel.messaging import this_instance

    endpoints = running_endpoints(settings())
    instance = this_instance()
    subject = subjects.instance_health(service, instance)

    async def ask() -> HealthReply:
        async with ToolselClient(endpoints.nats_url, connect_timeout_s=PROBE_S) as connected:
            return await connected.request(subject, b"{}", HealthReply, timeout_s=OWN_HEALTH_S)

    try:
        reply = asyncio.run(ask())
    except Exception as error:
        fail(f"the {service} on {instance} does not answer on {subject}: {why_down(error)}")
    print(reply.model_dump_json())


def service_settings(current: Settings, service: str) -> Settings:
    """A service's settings: what the environment sets, the rest from the ``toolsel up`` running on the home (its
    servers, as the service's own NATS user, and the home's admin token), so one more copy needs no exports on
    that machine; exit ``NO_STACK`` when there is neither a database configured nor a stack running."""
    if current.nats_url and current.database_url:
        return current
    running = running_stack(current.home, service)
    if running is None:
        if not current.database_url:
            fail(f"{NO_DATABASE} (`toolsel env --user {service}` prints the exports for a {service})", NO_STACK)
        return current
    found = {"nats_url": running.nats_url, "database_url": running.database_url, "admin_token": operator_token(current)}
    return current.model_copy(update={name: getattr(current, name) or value for name, value in found.items()})


def start_logging(current: Settings) -> None:
    """A served process's log lines, at ``TOOLSEL_LOG_LEVEL``, each with its time and logger."""
    logging.basicConfig(level=current.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")


def serve(create_app: Callable[[Settings], FastStream], service: str) -> None:
    """Build one service's app from the environment's settings (or the running stack's) and run it until it is
    stopped; exit 1 with one line when it refuses to start (``REFUSALS``)."""
    from threadpoolctl import threadpool_limits

    current = service_settings(settings(), service)
    threadpool_limits(current.blas_threads, user_api="blas")
    start_logging(current)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        asyncio.run(create_app(current).run())
    except REFUSALS as refused:
        fail(f"the {service} refuses to start: {refused}")


@app.command()
def selector(health: Health = False) -> None:
    """Run a selector (more copies share the load through a queue group)."""
    if health:
        own_health("selector")
        return
    from toolsel.services.selector.app import create_app

    serve(create_app, "selector")


@app.command()
def learner(
    rebuild: Annotated[
        bool,
        typer.Option(
            help="recompute posteriors and quality from the stored event history and the usage memory from the stored"
            " query texts, then exit"
        ),
    ] = False,
    health: Health = False,
) -> None:
    """Run a learner (more copies share the durable consumers)."""
    if health:
        own_health("learner")
        return
    if rebuild:
        from toolsel.cli.learning import rebuild_from_history

        rebuild_from_history()
        return
    from toolsel.services.learner.app import create_app

    serve(create_app, "learner")


@app.command()
def indexer(
    switch_model: Annotated[
        bool,
        typer.Option(
            help="make the configured embedding model the store's: drop the previous model's vectors (the tools',"
            " the reviews', those learnt from use), embed every tool with this one, then exit; stop the services first"
        ),
    ] = False,
    health: Health = False,
) -> None:
    """Run an indexer."""
    if health:
        own_health("indexer")
        return
    if switch_model:
        from toolsel.cli.tools import switch_embedding_model

        switch_embedding_model()
        return
    from toolsel.services.indexer.app import create_app

    serve(create_app, "indexer")


@app.command()
def dashboard(
    host: Annotated[str | None, typer.Option(help="address to listen on (default TOOLSEL_DASHBOARD_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default TOOLSEL_DASHBOARD_PORT)")] = None,
) -> None:
    """Serve the operators' dashboard and HTTP admin API (sign in with the admin token; API at /api, its OpenAPI
    document at /api/openapi.json), as the operator of the configured or running stack."""
    import uvicorn

    from toolsel.dashboard.app import create_app, uvicorn_options

    current = settings()
    endpoints = running_endpoints(current)
    token = operator_token(current)
    if not token:
        fail("no admin token to sign in with: set TOOLSEL_ADMIN_TOKEN (or start the stack with `toolsel up`)", USAGE)
    start_logging(current)
    app = create_app(current, endpoints.nats_url, token)
    chosen = port if port is not None else current.dashboard_port
    uvicorn.run(app, host=host or current.dashboard_host, port=chosen, **uvicorn_options(current))


if __name__ == "__main__":
    app()
