"""Stack commands: ``up``, ``demo``, ``status`` and ``migrate``."""

import asyncio
import shlex
import signal
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, Field
from rich.table import Table

from toolsel import identities
from toolsel.cli.demo import reset_demo, run_demo
from toolsel.cli.running import (
    NO_STACK,
    USAGE,
    AsJson,
    ObjectFormat,
    ObjectOutput,
    chosen,
    database_url,
    fail,
    operator_token,
    print_reply,
    run,
    running_endpoints,
    settings,
    warn,
)
from toolsel.client import ToolselClient
from toolsel.contracts import HealthReply, subjects
from toolsel.embedded import ADMIN_TOKEN_FILE, CREDENTIALS_FILE, login_url, redacted
from toolsel.embedding_space import ModelMismatch
from toolsel.render import console, errors, new_table, status_table
from toolsel.stack import (
    AGENT,
    OPERATOR,
    Stack,
    StackRunning,
    Unreachable,
    configured_endpoints,
    probe_stack,
    running_stack,
    stack_info,
)
from toolsel.store import create_pool
from toolsel.store import migrate as apply_migrations

app = typer.Typer()


def _where(stack: Stack) -> Table:
    assert stack.endpoints is not None
    table = new_table("toolsel is up", "what", "where", show_header=False)
    table.add_row("data directory", str(stack.settings.home))
    table.add_row("NATS", redacted(stack.endpoints.nats_url) + ("  (embedded)" if stack.nats else ""))
    if stack.nats:
        table.add_row("NATS credentials", str(stack.nats.directory / CREDENTIALS_FILE))
    table.add_row("PostgreSQL", stack.endpoints.database_url + ("  (embedded)" if stack.postgres else ""))
    if not stack.settings.admin_token:
        table.add_row("admin token", str(stack.settings.home / ADMIN_TOKEN_FILE))
    if url := stack.dashboard_url():
        table.add_row("dashboard", f"{url}  (sign in with the admin token)")
    elif stack.dashboard_not_started:
        table.add_row("dashboard", stack.dashboard_not_started)
    table.add_row("logs", _logs(stack))
    table.add_row("select subject", subjects.any_scope(subjects.SELECT_ROOT))
    table.caption = "`toolsel env` prints the exports another shell or a script needs"
    table.caption_justify = "left"
    return table


def _start(stack: Stack, doing: str) -> None:
    """Start ``stack``; exit 1 with the reason when another stack runs on its home or the store holds another
    model's vectors (before any service starts), ``NO_STACK`` naming the server when one the environment names does
    not answer. Warn when its embedded NATS could not have its kept port back: every identity's URL changed with
    it."""
    try:
        with console.status(doing):
            asyncio.run(stack.start())
    except (StackRunning, ModelMismatch) as refused:
        fail(str(refused))
    except Unreachable as unreachable:
        fail(str(unreachable), NO_STACK)
    if stack.nats is not None and stack.nats.moved_from is not None:
        warn(
            f"NATS's port {stack.nats.moved_from} was taken by another program: NATS is on {stack.nats.port} now"
            " and keeps it, so the identities' URLs changed (`toolsel env --user TENANT.NAME` prints one)"
        )


@app.command()
def up() -> None:
    """Start NATS, PostgreSQL (embedded unless configured) and the three services, restarting any service or
    embedded server that dies; Ctrl-C stops all. Refuses when a stack already runs on this home."""
    stack = Stack(settings(), keep_nats_port=True)
    stopping = False

    def _stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        _start(stack, "starting toolsel")
        console.print(_where(stack))
        console.print("Press Ctrl-C to stop.")
        while not stopping:
            for name in stack.supervise():
                state = stack.supervision[name]
                console.print(
                    f"[yellow]{name} died and was restarted ({state.restarts}; down {state.last_down_s or 0:.1f} s)"
                    f"[/]; see its log in {_logs(stack)}"
                )
            time.sleep(0.2)
    finally:
        if stack.lock is not None:
            stack.stop()
            console.print("toolsel stopped.")


def _logs(stack: Stack) -> str:
    return str(stack.settings.home / "logs")


@app.command()
def demo(
    reset: Annotated[
        bool, typer.Option(help="remove the demo's plugins (demo-*) and what it taught, instead of running it")
    ] = False,
) -> None:
    """Sync the demo catalog (plugins demo-*), select, report outcomes and show the ranking move (starts a stack if
    none); --reset removes what it synced and what it taught."""
    current = settings()
    endpoints = configured_endpoints(current)
    stack: Stack | None = None
    try:
        if endpoints is None:
            stack = Stack(current, keep_nats_port=True)
            _start(stack, "starting an embedded toolsel for the demo")
            console.print(_where(stack))
            endpoints = stack.endpoints
        assert endpoints is not None
        url, token = endpoints.nats_url, operator_token(current)

        async def main() -> None:
            async with ToolselClient(url, admin_token=token) as connected:
                if not reset:
                    return await run_demo(connected, current)
                pool = await create_pool(endpoints.database_url)
                try:
                    await reset_demo(connected, pool)
                finally:
                    await pool.close()

        run(main)
    finally:
        if stack is not None:
            stack.stop()


class ServiceHealth(BaseModel):
    """A service in ``toolsel status --format json``: its health reply, or the error it answered with instead."""

    service: str
    status: str
    version: str | None = None
    details: dict[str, str | int | float | bool] = Field(default_factory=dict)
    error: str | None = None


class StackHealth(BaseModel):
    services: list[ServiceHealth]
    servers: dict[str, str] = Field(default_factory=dict)
    """NATS and PostgreSQL: ``ok``, or why they do not answer."""
    down: dict[str, str] = Field(default_factory=dict)
    """Each part that is down (servers first), with why: empty when all is well."""
    pid: int | None = None
    """The process of the ``toolsel up`` running on this home, if one does."""
    restarts: dict[str, int] = Field(default_factory=dict)
    """Restarts of each service and embedded server since that ``toolsel up`` started."""


def _health(service: str, reply: HealthReply | str, asked: bool) -> ServiceHealth:
    if isinstance(reply, HealthReply):
        return ServiceHealth.model_validate(reply.model_dump(include={"service", "status", "version", "details"}))
    return ServiceHealth(service=service, status="down" if asked else "not asked", error=reply)


@app.command()
def status(
    service: Annotated[str | None, typer.Option(help="check one service only")] = None,
    fmt: ObjectOutput = ObjectFormat.table,
    as_json: AsJson = False,
) -> None:
    """Ask PostgreSQL, NATS and every service whether they answer; exit 0 only when all do, else 1 with one line
    naming what is down (or saying that the NATS user, a tenant's identity, may not ask the services)."""
    if service is not None and service not in subjects.SERVICES:
        fail(f"unknown service {service!r}: toolsel's services are {', '.join(subjects.SERVICES)}", USAGE)
    services = (service,) if service else subjects.SERVICES
    current = settings()
    endpoints = running_endpoints(current)
    found = asyncio.run(probe_stack(endpoints, services, operator_token(current)))
    info = stack_info(current.home) or {}
    health = StackHealth(
        services=[_health(name, reply, found.not_permitted is None) for name, reply in found.services.items()],
        servers=found.servers,
        down=found.down(),
        pid=info.get("pid"),
        restarts=info.get("restarts", {}),
    )

    def show(health: StackHealth) -> None:
        if health.servers.get("nats") == "ok" and found.not_permitted is None:
            console.print(status_table(found.services))
        console.print("servers: " + ", ".join(f"{name} {why}" for name, why in health.servers.items()))
        if health.pid is not None:
            restarts = ", ".join(f"{name} {count}" for name, count in health.restarts.items())
            console.print(f"restarts since toolsel up (pid {health.pid}): {restarts}")

    print_reply(health, chosen(as_json, fmt), show)
    if found.not_permitted is not None:
        fail(
            f"not permitted for user {found.not_permitted}: a tenant's identity may not ask the services' health"
            " (their counters are every tenant's); ask as the operator (`toolsel env` prints its TOOLSEL_NATS_URL)"
        )
    if health.down:
        fail("down: " + "; ".join(f"{name} ({why})" for name, why in health.down.items()))


@app.command()
def migrate() -> None:
    """Apply the database migrations and exit."""
    applied = asyncio.run(apply_migrations(database_url(settings())))
    console.print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")


ENV_USERS = {OPERATOR: OPERATOR, "agent": AGENT, **{service: service for service in subjects.SERVICES}}
"""Whose environment ``toolsel env`` prints (the option's value -> the NATS user): the operators', the default
tenant's agents' or a service's (or a tenant's identity, by its NATS user)."""
SECRET = "SECRET"
"""What stands for an identity's secret in the URL ``toolsel env`` prints: the home keeps only its hash."""


def _identity_env(home: Path, user: str) -> None:
    """An identity's export: its NATS URL on the stack running on ``home`` (the port a restart keeps), with
    ``SECRET`` for the secret that `toolsel identity create` showed once."""
    info = stack_info(home)
    if info is None:
        fail(f"no toolsel running on {home}: start one, or set TOOLSEL_HOME to its home", NO_STACK)
    print(f"export TOOLSEL_NATS_URL={shlex.quote(login_url(info['nats_url'], user, SECRET))}")
    errors.print(f"{SECRET} stands for {user}'s secret (`toolsel identity create` showed it once)", soft_wrap=True)


@app.command()
def env(
    user: Annotated[
        str,
        typer.Option(
            help="whose: operator (admin commands), agent (the default tenant's agents: its NATS URL alone), a"
            " service (one more selector, learner or indexer: `toolsel selector` in that environment) or a"
            " tenant's identity TENANT.NAME (its NATS URL alone, SECRET standing for its secret)"
        ),
    ] = OPERATOR,
) -> None:
    """Print the `export TOOLSEL_...` lines that reach the running toolsel from another shell or a script:
    eval "$(toolsel env)"."""
    current = settings()
    if user not in ENV_USERS and user in identities.load(current.home):
        return _identity_env(current.home, user)
    if user not in ENV_USERS:
        fail(
            f"unknown NATS user {user!r}: {', '.join(ENV_USERS)}, or an identity's TENANT.NAME (`toolsel identity"
            " list`)",
            USAGE,
        )
    if user == OPERATOR:
        endpoints = configured_endpoints(current)
        if endpoints is None:
            fail(
                "no running toolsel: start one with `toolsel up`, or set TOOLSEL_NATS_URL and TOOLSEL_DATABASE_URL",
                NO_STACK,
            )
    else:  # another user's credentials are those of the stack running on the home, never the operator's URL
        endpoints = running_stack(current.home, ENV_USERS[user])
        if endpoints is None:
            fail(
                f"no toolsel running on {current.home}: `toolsel env --user {user}` reads its credentials"
                " from the `toolsel up` running there (start one, or set TOOLSEL_HOME to its home)",
                NO_STACK,
            )
        if not (stack_info(current.home) or {}).get("nats_embedded"):  # its URL is the one the operator configured
            fail(
                f"the toolsel on {current.home} uses a NATS server of its own (TOOLSEL_NATS_URL): the password of"
                f" its {user} user is set there, not known to the home"
            )
    exports = {"TOOLSEL_NATS_URL": endpoints.nats_url}
    if user != "agent":  # an agent's shell holds no database credentials and no admin token
        exports |= {
            "TOOLSEL_HOME": str(current.home),
            "TOOLSEL_DATABASE_URL": endpoints.database_url,
            "TOOLSEL_ADMIN_TOKEN": operator_token(current) or "",
        }
    if user == OPERATOR:  # where to sign in, when the running stack serves the dashboard
        exports["TOOLSEL_DASHBOARD_URL"] = (stack_info(current.home) or {}).get("dashboard_url") or ""
    for name, value in exports.items():
        if value:
            print(f"export {name}={shlex.quote(value)}")
