"""Stack commands: ``up``, ``demo``, ``status`` and ``migrate``."""

import asyncio
import signal
import time
from typing import Annotated

import typer
from rich.table import Table

from cli.demo import run_demo
from cli.running import client, run, settings
from contracts import HealthReply, subjects
from toolsel.client import ToolselClient
from toolsel.render import console, status_table
from toolsel.stack import Stack, configured_endpoints, health_all
from toolsel.store import migrate as apply_migrations

app = typer.Typer()


def _where(stack: Stack) -> Table:
    assert stack.endpoints is not None
    table = Table(title="toolsel is up", title_justify="left", show_header=False)
    table.add_row("data directory", str(stack.settings.home))
    table.add_row("NATS", stack.endpoints.nats_url + ("  (embedded)" if stack.nats else ""))
    table.add_row("PostgreSQL", stack.endpoints.database_url + ("  (embedded)" if stack.postgres else ""))
    table.add_row("logs", str(stack.settings.home / "logs"))
    table.add_row("select subject", subjects.SELECT)
    return table


@app.command()
def up() -> None:
    """Start NATS, PostgreSQL (embedded unless configured) and the three services; Ctrl-C stops all."""
    stack = Stack(settings())
    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        with console.status("starting toolsel"):
            asyncio.run(stack.start())
        console.print(_where(stack))
        console.print("Press Ctrl-C to stop.")
        while not stopping:
            dead = stack.dead_services()
            if dead:
                console.print(f"[red]service(s) exited: {', '.join(dead)}[/]; see {stack.settings.home / 'logs'}")
                raise typer.Exit(1)
            time.sleep(0.2)
    finally:
        stack.stop()
        console.print("toolsel stopped.")


@app.command()
def demo() -> None:
    """Sync the demo catalog, select, report outcomes and show the ranking move (starts a stack if none)."""
    current = settings()
    endpoints = configured_endpoints(current)
    stack: Stack | None = None
    try:
        if endpoints is None:
            stack = Stack(current)
            with console.status("starting an embedded toolsel for the demo"):
                asyncio.run(stack.start())
            console.print(_where(stack))
            endpoints = stack.endpoints
        assert endpoints is not None
        url = endpoints.nats_url

        async def main() -> None:
            async with ToolselClient(url) as connected:
                await run_demo(connected)

        run(main)
    finally:
        if stack is not None:
            stack.stop()


@app.command()
def status(service: Annotated[str | None, typer.Option(help="check one service only")] = None) -> None:
    """Ask every service for its health; exit 0 only when all answer."""
    services = (service,) if service else subjects.SERVICES

    async def main() -> dict[str, HealthReply | str]:
        async with client() as connected:
            return await health_all(connected, services)

    replies = run(main)
    console.print(status_table(replies))
    if not all(isinstance(r, HealthReply) for r in replies.values()):
        raise typer.Exit(1)


@app.command()
def migrate() -> None:
    """Apply the database migrations and exit."""
    url = settings().database_url
    if not url:
        console.print("[red]Set TOOLSEL_DATABASE_URL.[/]")
        raise typer.Exit(2)
    applied = asyncio.run(apply_migrations(url))
    console.print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")
