"""What every command shares: the settings, a client of the running stack, a database pool, and how a failed
request becomes an exit code."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

import asyncpg
import typer
from pydantic import BaseModel, ValidationError

from toolsel.client import ToolselClient, ToolselError
from toolsel.messaging import validation_reply
from toolsel.render import console, rows_table
from toolsel.settings import Settings, get_settings
from toolsel.stack import configured_endpoints
from toolsel.store import create_pool

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)

AsJson = Annotated[bool, typer.Option("--json", help="print the raw reply")]


def settings() -> Settings:
    """The command's settings, read once from the environment."""
    return get_settings()


@asynccontextmanager
async def client() -> AsyncIterator[ToolselClient]:
    """A client of the configured (or running) stack; exit 2 when there is none."""
    endpoints = configured_endpoints(settings())
    if endpoints is None:
        console.print("[red]No running toolsel:[/] start one with `toolsel up`, or set TOOLSEL_NATS_URL.")
        raise typer.Exit(2)
    async with ToolselClient(endpoints.nats_url) as connected:
        yield connected


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run one coroutine; a typed error reply exits 1, invalid input exits 2, each with its message."""
    try:
        return asyncio.run(main())
    except ToolselError as error:
        console.print(f"[red]{error}[/]")
        raise typer.Exit(1) from error
    except ValidationError as error:
        reply = validation_reply(error)
        console.print(f"[red]{reply.error.message} ({reply.error.field})[/]")
        raise typer.Exit(2) from error


def request(call: Callable[[ToolselClient], Awaitable[R]], as_json: bool, show: Callable[[R], None]) -> None:
    """Send one request and print its reply, raw or as ``show`` renders it."""

    async def main() -> R:
        async with client() as connected:
            return await call(connected)

    print_reply(run(main), as_json, show)


def print_reply(reply: R, as_json: bool, show: Callable[[R], None]) -> None:
    if as_json:
        print(reply.model_dump_json(indent=2))
    else:
        show(reply)


def show_rows(title: str, key: str) -> Callable[[Any], None]:
    """Show a reply's list ``key`` as a table."""
    return lambda reply: console.print(rows_table(title, [item.model_dump() for item in getattr(reply, key)]))


def with_database(job: Callable[[asyncpg.Pool], Awaitable[T]]) -> T:
    """Run one job against the configured (or running stack's) PostgreSQL."""
    current = settings()
    url = current.database_url or getattr(configured_endpoints(current), "database_url", None)
    if not url:
        console.print("[red]No database:[/] start toolsel with `toolsel up`, or set TOOLSEL_DATABASE_URL.")
        raise typer.Exit(2)

    async def main() -> T:
        pool = await create_pool(url)
        try:
            return await job(pool)
        finally:
            await pool.close()

    return run(main)
