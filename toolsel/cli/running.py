"""What every command shares: the settings, a client of the running stack, a database pool, how input files are
read, how replies are printed (table, JSON or CSV), and how a failure becomes one line on stderr and an exit
code, one per kind of failure (the table in docs/operators.md#exit-codes)."""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NamedTuple, NoReturn, TypeVar, get_args

import asyncpg
import nats.errors
import typer
from pydantic import BaseModel, ValidationError
from rich.markup import escape

from toolsel.client import ToolselClient, ToolselError
from toolsel.client_methods import Request
from toolsel.contracts import ErrorCode
from toolsel.contracts.common import too_deep
from toolsel.embedded import admin_token, redacted
from toolsel.errors import NoStack, Timeout
from toolsel.errors import first_problem as field_and_why
from toolsel.render import console, errors, printable_json, rows_csv, rows_table
from toolsel.settings import Settings, SettingsRefused, get_settings, refusal
from toolsel.stack import Endpoints, configured_endpoints
from toolsel.store import create_pool

T = TypeVar("T")
R = TypeVar("R", bound=BaseModel)

FAILED = 1
"""Exit code of a failure: the stack answered with a refusal (unauthorized, not found, conflict) or an error, a
service is unhealthy, or the command broke."""
USAGE = 2
"""Exit code of bad input: a file, a field or an option the command cannot use (also when the stack refused it as
``invalid_request``)."""
NO_STACK = 3
"""Exit code when there is no toolsel to ask: none running or configured, NATS out of reach, no service answering
the request, or no reply in time."""
INTERRUPTED = 130
"""Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it)."""


class Format(StrEnum):
    """How a reply is printed: a table (or lines) for people, JSON or CSV (a listing's rows) for programs."""

    table = "table"
    json = "json"
    csv = "csv"


class ObjectFormat(StrEnum):
    """How a reply that is one object rather than rows is printed: there is no CSV of it."""

    table = "table"
    json = "json"


Output = Annotated[Format, typer.Option("--format", help="table, json or csv")]
ObjectOutput = Annotated[ObjectFormat, typer.Option("--format", help="table or json")]
AsJson = Annotated[bool, typer.Option("--json", help="same as --format json")]


def chosen(as_json: bool, fmt: Format | ObjectFormat = Format.table) -> Format:
    """The format asked for, ``--json`` being short for ``--format json``."""
    return Format.json if as_json else Format(fmt.value)


class Rows(NamedTuple):
    """How a listing shows its reply: the reply's list ``key`` as a table titled ``title`` (CSV writes the same
    rows)."""

    title: str
    key: str


Show = Callable[[R], None] | Rows
"""A reply's table output: a function that prints it, or the rows of a listing."""


def complain(message: str) -> None:
    """Print ``message`` as one error line on stderr."""
    errors.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)


def fail(message: str, code: int = FAILED) -> NoReturn:
    """Print ``message`` as one line on stderr and exit with ``code``."""
    complain(message)
    raise typer.Exit(code)


def warn(message: str) -> None:
    errors.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)


def settings() -> Settings:
    """The command's settings, read once from the environment; exit 2 naming the variable when one of them
    cannot be used (a service started with it would only fail the same way again)."""
    try:
        return get_settings()
    except SettingsRefused as refused:
        fail(str(refused), USAGE)


def operator_token(current: Settings) -> str | None:
    """TOOLSEL_ADMIN_TOKEN, else the token ``toolsel up`` keeps in the home."""
    return current.admin_token or admin_token(current.home)


def running_endpoints(current: Settings) -> Endpoints:
    """The configured (or running) stack's endpoints; exit ``NO_STACK`` when there is none."""
    endpoints = configured_endpoints(current)
    if endpoints is None:
        fail("no running toolsel: start one with `toolsel up`, or set TOOLSEL_NATS_URL", NO_STACK)
    return endpoints


@asynccontextmanager
async def client(stay_connected: bool = False) -> AsyncIterator[ToolselClient]:
    """A client of the configured (or running) stack, carrying the operators' token; exit 2 when there is none.
    ``stay_connected`` for a server that holds it for its life (``ToolselClient.stay_connected``)."""
    current = settings()
    endpoints = running_endpoints(current)
    token = operator_token(current)
    async with ToolselClient(endpoints.nats_url, admin_token=token, stay_connected=stay_connected) as connected:
        yield connected


def _why(error: ToolselError) -> str:
    if error.detail.code is ErrorCode.UNAUTHORIZED and "disabled" in error.detail.message:
        return f"{error} (the services were started without a token: restart `toolsel up`, or see `toolsel env`)"
    return str(error)


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run one coroutine; each failure is one line that says why and exits with its kind's code: invalid input
    ``USAGE``, a refusal or error reply ``FAILED``, no stack to ask ``NO_STACK``."""
    try:
        return asyncio.run(main())
    except (NoStack, Timeout) as error:
        fail(error.detail.message, NO_STACK)
    except ToolselError as error:
        fail(_why(error), USAGE if error.detail.code is ErrorCode.INVALID_REQUEST else FAILED)
    except ValidationError as error:
        fail(first_problem(error), USAGE)
    except nats.errors.NoRespondersError:
        fail("no service answers that request: is every service up? (`toolsel status`)", NO_STACK)
    except nats.errors.TimeoutError:
        fail("the stack did not answer in time: see `toolsel status` and the services' logs", NO_STACK)
    except (nats.errors.NoServersError, ConnectionRefusedError):
        url = getattr(configured_endpoints(settings()), "nats_url", None)
        fail(f"cannot reach NATS at {redacted(url) if url else 'the configured URL'}: is toolsel up?", NO_STACK)


def first_problem(error: ValidationError) -> str:
    """A validation error as one line: the first offending field and why (and how many more there are); of the
    settings, the environment variable that set it."""
    if error.title == Settings.__name__:
        return refusal(error)
    field, why = field_and_why(error)
    return f"{field}: {why}" if field else why


def require_file(path: Path) -> None:
    """Exit 2 naming ``path``, a file the command reads, when it is missing or a directory, before any work
    (training read its pairs only once it had loaded the model, and failed with a traceback's last line)."""
    if path.is_dir():
        fail(f"{path}: is a directory, not a file", USAGE)
    if not path.exists():
        fail(f"{path}: no such file", USAGE)


def read_json(path: Path) -> Any:
    """The JSON in ``path``; exit 2 naming the file when it is missing, unreadable, empty or not JSON."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        fail(f"{path}: no such file", USAGE)
    except IsADirectoryError:
        fail(f"{path}: is a directory, not a JSON file", USAGE)
    except (OSError, UnicodeDecodeError) as error:
        fail(f"{path}: cannot read it ({error})", USAGE)
    if not text.strip():
        fail(f"{path}: empty file, expected JSON", USAGE)
    return parse_json(text, str(path))


def parse_json(text: str, where: str) -> Any:
    """The JSON in ``text``; exit 2 naming ``where`` when it is not JSON or nests too deep to parse (measured
    first, without recursion)."""
    deep = too_deep(text)
    if deep is not None:
        fail(f"{where}: {deep}", USAGE)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        fail(f"{where}: not JSON ({error})", USAGE)


def validated(model: type[R], data: Any, where: str) -> R:
    """``data`` as ``model``; exit 2 naming ``where`` and the offending field when it is not one."""
    return built(lambda: model.model_validate(data), where)


def built(make: Callable[[], R], where: str) -> R:
    """What ``make`` builds (a contract from the user's input); exit 2 naming ``where`` and the offending field
    when the input is not valid."""
    try:
        return make()
    except ValidationError as error:
        fail(f"{where}: {first_problem(error)}", USAGE)


def ask(
    method: Request[Any, R],
    fields: Mapping[str, Any],
    where: str,
    fmt: Format,
    show: Show[R],
    rows: str | None = None,
) -> None:
    """Validate ``fields`` as ``method``'s request (exit 2 naming ``where`` and the field when they are not one),
    send it to the running stack and print the reply (see ``print_reply``)."""
    body = validated(method.message, {**method.preset, **fields}, where)

    async def main() -> R:
        async with client() as connected:
            return await method.invoke(connected, body)

    print_reply(run(main), fmt, show, rows)


def print_reply(reply: R, fmt: Format, show: Show[R], rows: str | None = None) -> None:
    """The reply as JSON, as CSV of its list ``rows`` (a ``Rows`` show names it itself), or as ``show`` renders
    it; csv needs the rows."""
    key = show.key if isinstance(show, Rows) else rows
    if fmt is Format.json:
        print(printable_json(reply.model_dump_json(indent=2)))
    elif fmt is Format.csv:
        if key is None:
            fail("this command has no csv output: use --format table or json", USAGE)
        print(rows_csv([item.model_dump(mode="json") for item in getattr(reply, key)], _columns(reply, key)), end="")
    elif isinstance(show, Rows):
        items = [item.model_dump() for item in getattr(reply, show.key)]
        console.print(rows_table(show.title, items, _columns(reply, show.key)))
    else:
        show(reply)


def _columns(reply: BaseModel, key: str) -> list[str]:
    """The fields of the items of the reply's list ``key``, read from its type: an empty listing keeps its
    header."""
    item = next(iter(get_args(type(reply).model_fields[key].annotation)), None)
    return list(item.model_fields) if isinstance(item, type) and issubclass(item, BaseModel) else []


NO_DATABASE = (
    "no database: start toolsel with `toolsel up` (commands on its machine find it; `toolsel env` prints the exports"
    " for another), or set TOOLSEL_DATABASE_URL"
)


def database_url(current: Settings) -> str:
    """The configured (or running stack's) PostgreSQL; exit ``NO_STACK`` when there is none."""
    url = current.database_url or getattr(configured_endpoints(current), "database_url", None)
    if not url:
        fail(NO_DATABASE, NO_STACK)
    return url


def with_database(job: Callable[[asyncpg.Pool], Awaitable[T]]) -> T:
    """Run one job against the configured (or running stack's) PostgreSQL."""
    url = database_url(settings())

    async def main() -> T:
        try:
            pool = await create_pool(url)
        except asyncpg.exceptions.InvalidAuthorizationSpecificationError as refused:
            fail(f"PostgreSQL at {redacted(url)} refused the connection: {refused}", FAILED)
        except (OSError, asyncpg.exceptions.CannotConnectNowError, asyncpg.PostgresConnectionError) as unreachable:
            fail(f"cannot reach PostgreSQL at {redacted(url)}: {unreachable}", NO_STACK)
        try:
            return await job(pool)
        finally:
            await pool.close()

    return run(main)
