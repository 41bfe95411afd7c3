"""``toolsel up``: the embedded servers (or the configured ones) plus the three services as child processes.

One stack per home: it holds a lock on ``stack.lock`` while it runs (the kernel releases it if the process
dies), so a second one refuses to start rather than share the servers' data. The running stack writes
``stack.json`` (0600: it may hold credentials) so other commands find it; a file left by a crashed run is
recognised by its dead pid and ignored. A service that exits is restarted after a backoff, and so is an embedded
NATS or PostgreSQL that dies (the services reconnect to it: same port, same socket, same data).
"""

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import psutil

from toolsel.client import ToolselClient
from toolsel.contracts import HealthReply, subjects
from toolsel.embedded import (
    EmbeddedNats,
    EmbeddedPostgres,
    admin_token,
    die_with_parent,
    login_url,
    nats_credentials,
    port_taken,
    redacted,
    write_private,
)
from toolsel.errors import NoStack, NotPermitted
from toolsel.identities import admitted
from toolsel.nats_permissions import DEFAULT_AGENT
from toolsel.settings import Settings

STACK_FILE = "stack.json"
LOCK_FILE = "stack.lock"
OPERATOR = "operator"
"""The NATS user of ``toolsel up`` itself and of the CLI."""
AGENT = DEFAULT_AGENT.user
"""The NATS user of the default tenant's agents."""
TOOLSEL_COMMAND = (sys.executable, "-m", "toolsel.cli")
"""The ``toolsel`` command line for a child process (``+ ("status",)``): a command line, not an import, so the
shared runtime never imports the CLI or a service."""
SERVICE_COMMAND = (sys.executable, "-m", "toolsel.cli.services")
"""A service process's command line (``+ ("selector",)``): only the service commands, so a service does not
hold every other command's imports (about 50 MB per process)."""
DASHBOARD = "dashboard"
"""The process serving the operators' dashboard and HTTP admin API, beside the services."""
START_LOG_LINES = 40
"""How much of a dead service's log a failed start quotes."""


async def health_all(client: ToolselClient, services: tuple[str, ...]) -> dict[str, HealthReply | str]:
    """Each service's health reply, or why it did not answer; ``NotPermitted`` when the client's user may not
    ask (a tenant's identity)."""
    replies: dict[str, HealthReply | str] = {}
    for service in services:
        try:
            replies[service] = await client.health(service)
        except NotPermitted:
            raise
        except Exception as error:
            replies[service] = type(error).__name__
    return replies


@dataclass
class Endpoints:
    nats_url: str
    """With the credentials of the NATS user it was made for."""
    database_url: str
    """Empty for a client that reaches only NATS (an agent, given a NATS URL alone)."""


class StackRunning(RuntimeError):
    """Another stack runs on this home."""


class Unreachable(RuntimeError):
    """A server the environment names (``TOOLSEL_DATABASE_URL``, ``TOOLSEL_NATS_URL``) does not answer."""


PROBE_S = 2.0
"""How long ``toolsel status`` waits for NATS or PostgreSQL to answer."""


def why_down(error: BaseException) -> str:
    """An error as a few words for one status line: its kind and its first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def why_unreachable(server: str, variable: str, url: str, why: str, exported: Sequence[str]) -> str:
    """Why a stack cannot start on a server that ``variable`` names, in one line: where (no password), why, and
    that the ``exported`` URLs stand in for the home's own servers: ``eval "$(toolsel env)"`` leaves them in a
    shell after the stack they name has stopped."""
    named = (
        f"the servers that {' and '.join(exported)} name" if len(exported) > 1 else f"the server that {variable} names"
    )
    return (
        f"cannot reach {server} at {variable} ({redacted(url)}): {why}. toolsel uses {named} instead of the"
        f" home's own: unset {'them' if len(exported) > 1 else 'it'} to start the home's own"
        ' (`eval "$(toolsel env)"` leaves the exports in a shell after the stack they name has stopped)'
    )


@dataclass
class StackProbe:
    """What ``toolsel status`` found: each server's state (``ok`` or why it is down) and each service's health."""

    servers: dict[str, str]
    services: dict[str, HealthReply | str]
    not_permitted: str | None = None
    """The NATS user that may not ask the services' health (a tenant's identity), when it is one: they were not
    asked, so nothing is known of them."""

    def down(self) -> dict[str, str]:
        """Each part that is down, servers first, with why (services not asked are not down)."""
        services = {} if self.not_permitted else self.services
        parts = {**self.servers, **{n: r for n, r in services.items() if not isinstance(r, HealthReply)}}
        return {name: why for name, why in parts.items() if why != "ok"}


async def probe_stack(endpoints: Endpoints, services: tuple[str, ...], admin: str | None) -> StackProbe:
    """Ask PostgreSQL, NATS and then each service (over NATS, when it is up) whether they answer."""
    from toolsel.store import answers

    servers: dict[str, str] = {}
    if endpoints.database_url:  # an agent's shell knows only NATS
        try:
            await answers(endpoints.database_url, PROBE_S)
            servers["postgres"] = "ok"
        except Exception as error:
            servers["postgres"] = why_down(error)
    not_permitted = None
    try:
        async with ToolselClient(endpoints.nats_url, admin_token=admin, connect_timeout_s=PROBE_S) as client:
            servers["nats"] = "ok"
            try:
                replies = await health_all(client, services)
            except NotPermitted:
                not_permitted = urlsplit(endpoints.nats_url).username or "(none)"
                replies = {service: f"not asked: not permitted for user {not_permitted}" for service in services}
    except Exception as error:
        servers["nats"] = why_down(error)
        replies = {service: "not asked: NATS is down" for service in services}
    return StackProbe(servers, replies, not_permitted)


def stack_info(home: Path) -> dict[str, Any] | None:
    """What the ``toolsel up`` running on ``home`` wrote in its stack file, if it is still alive."""
    path = home / STACK_FILE
    try:
        info: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not psutil.pid_exists(int(info.get("pid", -1))):
        return None
    return info


def rotated(log: Path, max_bytes: int) -> Path:
    """``log``, kept as ``<name>.1`` first (replacing the one before) when it has reached ``max_bytes`` (0: never)."""
    if max_bytes > 0 and log.exists() and log.stat().st_size >= max_bytes:
        os.replace(log, log.with_name(f"{log.name}.1"))
    return log


@contextmanager
def stopped_stack_database(home: Path) -> Iterator[str]:
    """The URL of a stopped stack's embedded PostgreSQL, started for one job that no service may run beside: the
    home's stack lock is held meanwhile (``StackRunning`` when a stack runs), the server stopped afterwards."""
    lock = lock_home(home)
    postgres = EmbeddedPostgres(home / "pg")
    try:
        yield postgres.start()
    finally:
        postgres.stop()
        lock.close()


def running_stack(home: Path, user: str = OPERATOR) -> Endpoints | None:
    """The endpoints of a ``toolsel up`` that is still alive, if any, for NATS ``user`` (its embedded NATS's
    credentials are read from the home)."""
    info = stack_info(home)
    if info is None:
        return None
    url = info["nats_url"]
    if info.get("nats_embedded"):
        url = login_url(url, user, nats_credentials(home / "nats")[user])
    return Endpoints(url, info["database_url"])


def configured_endpoints(settings: Settings, user: str = OPERATOR) -> Endpoints | None:
    """Explicit URLs from the environment win, each on its own (a NATS URL alone is an agent's: it is never swapped
    for the operator's); what is not set comes from a running stack; None when NATS is neither (start one)."""
    running = None if settings.nats_url and settings.database_url else running_stack(settings.home, user)
    nats_url = settings.nats_url or (running.nats_url if running else None)
    if nats_url is None:
        return None
    return Endpoints(nats_url, settings.database_url or (running.database_url if running else ""))


def lock_home(home: Path) -> TextIO:
    """Hold the home's stack lock (until the returned file closes or this process dies), or raise
    ``StackRunning`` naming the process that holds it."""
    home.mkdir(parents=True, exist_ok=True)
    handle = (home / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "unknown"
        handle.close()
        raise StackRunning(
            f"toolsel is already running on {home} (pid {owner}): use it, stop it first, "
            "or set TOOLSEL_HOME to another directory"
        ) from None
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


STOP_MARGIN_S = 10.0
"""How much longer than ``TOOLSEL_SHUTDOWN_GRACE_S`` ``toolsel up`` waits for a stopping service before it kills
it: after the grace that the requests and events in hand get, a selector gives its outbox up to 5 s to publish the
selection events it holds (``OUTBOX_SHUTDOWN_S``), and every service then closes its subscriptions and
connections. compose.yaml's ``stop_grace_period`` (30 s) leaves more than this over the default grace."""


def stop_wait_s(settings: Settings) -> float:
    """How long a stopping service is given before it is killed: its shutdown grace and ``STOP_MARGIN_S``."""
    return settings.shutdown_grace_s + STOP_MARGIN_S


def restart_delay(quick_exits: int, first_s: float, max_s: float) -> float:
    """Wait before restarting a service that exited, given how many quick exits in a row preceded this one:
    doubled for each, at most ``max_s``; a service that keeps crashing does not spin."""
    return float(min(first_s * 2**quick_exits, max_s))


@dataclass
class Supervision:
    """One service's restarts: how many, how many quick exits in a row, and when the next start is due."""

    restarts: int = 0
    quick_exits: int = 0
    started_at: float = field(default_factory=time.monotonic)
    due: float | None = None
    down_since: float | None = None
    """When it was found dead (cleared once it runs again)."""
    last_down_s: float | None = None
    """How long it was down the last time, from being found dead to running again."""
    last_error: str | None = None
    """Why the last restart failed, while it stays down."""


@dataclass
class Stack:
    """Servers and services started by this process, stopped in reverse order."""

    settings: Settings
    keep_nats_port: bool = False
    """The home's own stack (``toolsel up``, ``toolsel demo``): its embedded NATS keeps its port across restarts,
    so the URLs handed out stay valid (``EmbeddedNats.keep_port``). One in a temporary home (an evaluation, a
    benchmark, a test) takes any free port, leaving 4222 to the homes' own."""
    nats: EmbeddedNats | None = None
    postgres: EmbeddedPostgres | None = None
    services: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    endpoints: Endpoints | None = None
    supervision: dict[str, Supervision] = field(default_factory=dict)
    lock: TextIO | None = None
    """Held from the start until ``stop``: without it this stack owns nothing and stops nothing."""
    dashboard_not_started: str | None = None
    """Why the dashboard was not started (its port taken), said where its address would be."""

    async def start(self, timeout_s: float = 120) -> Endpoints:
        """Lock the home, then servers, migrations, services; returns once every service answers its health
        request. Raises ``StackRunning`` if another stack holds the home, ``Unreachable`` when a server the
        environment names does not answer, ``ModelMismatch`` when the store's vectors are another model's."""
        self.lock = lock_home(self.settings.home)
        endpoints = self.start_servers()  # in this thread: children die with the thread that started them
        await self.check_store(endpoints.database_url)
        if self.nats is None:
            with self.reaching("NATS", "TOOLSEL_NATS_URL", endpoints.nats_url):
                async with ToolselClient(endpoints.nats_url, connect_timeout_s=PROBE_S):
                    pass
        for name in self.servers():
            self.supervision[name] = Supervision()
        self.start_services()
        await self.answering(timeout_s)
        self.write_stack_file()
        return endpoints

    async def check_store(self, database_url: str) -> None:
        """Migrate the store, then check its model as every service does at its start (``ModelMismatch``): a
        refusal is said once, before any service starts, rather than by each dying service's log."""
        from toolsel import embedding_space
        from toolsel.store import create_pool

        with self.reaching("PostgreSQL", "TOOLSEL_DATABASE_URL", database_url):
            pool = await create_pool(database_url, max_size=1)  # it applies the migrations first
        try:
            await embedding_space.check(pool, self.settings)
        finally:
            await pool.close()

    @contextmanager
    def reaching(self, server: str, variable: str, url: str) -> Iterator[None]:
        """Raise ``Unreachable`` when ``server``, which the environment's ``variable`` names, cannot be reached;
        the failures of the home's own servers pass as they are."""
        import asyncpg

        try:
            yield
        except (OSError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError, NoStack) as error:
            if variable not in self.exported():
                raise
            why = "no NATS server answers there" if isinstance(error, NoStack) else why_down(error)
            raise Unreachable(why_unreachable(server, variable, url, why, self.exported())) from error

    def exported(self) -> list[str]:
        """The variables that named the servers this stack uses instead of starting the home's own."""
        own = {"TOOLSEL_DATABASE_URL": self.postgres, "TOOLSEL_NATS_URL": self.nats}
        return [variable for variable, server in own.items() if server is None]

    async def answering(self, timeout_s: float) -> None:
        """Return once every service answers its health request; raise when one died or time ran out."""
        assert self.endpoints is not None
        async with ToolselClient(self.endpoints.nats_url) as client:
            deadline = time.monotonic() + timeout_s
            while not all(isinstance(r, HealthReply) for r in (await health_all(client, subjects.SERVICES)).values()):
                dead = [name for name in self.dead_services() if name in subjects.SERVICES]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(self.start_failure(dead))
                await asyncio.sleep(0.2)

    def start_servers(self) -> Endpoints:
        home = self.settings.home
        home.mkdir(parents=True, exist_ok=True)
        nats_url = self.settings.nats_url
        if not nats_url:
            self.nats = EmbeddedNats(home / "nats", keep_port=self.keep_nats_port, admit=lambda: admitted(home))
            self.nats.start()
            nats_url = self.nats.login(OPERATOR)
        database_url = self.settings.database_url
        if not database_url:
            self.postgres = EmbeddedPostgres(home / "pg")
            database_url = self.postgres.start()
        self.endpoints = Endpoints(nats_url, database_url)
        return self.endpoints

    def service_env(self) -> dict[str, str]:
        """The environment of a ``toolsel`` process on this stack's servers, as the operator: the admin token is
        TOOLSEL_ADMIN_TOKEN when set, else the home's (generated on the first start)."""
        assert self.endpoints is not None
        return {
            **os.environ,
            "TOOLSEL_NATS_URL": self.endpoints.nats_url,
            "TOOLSEL_DATABASE_URL": self.endpoints.database_url,
            "TOOLSEL_HOME": str(self.settings.home),
            "TOOLSEL_ADMIN_TOKEN": self.settings.admin_token or admin_token(self.settings.home, create=True) or "",
        }

    def start_services(self) -> None:
        """The three services, and the dashboard unless its port is 0 or taken (supervised like them). A taken port
        was another program's, often another stack's dashboard: this stack advertised that one as its own, while its
        own restarted for good."""
        s, dashboard = self.settings, []
        if s.dashboard_port:
            if port_taken(s.dashboard_host, s.dashboard_port):
                self.dashboard_not_started = (
                    f"not started: port {s.dashboard_port} on {s.dashboard_host} is taken (set"
                    " TOOLSEL_DASHBOARD_PORT to another, or 0 for no dashboard)"
                )
            else:
                dashboard = [DASHBOARD]
        for name in (*subjects.SERVICES, *dashboard):
            self.services[name] = self.spawn(name)
            self.supervision[name] = Supervision()

    def dashboard_url(self) -> str | None:
        """Where the dashboard this stack runs listens, if it runs one."""
        if DASHBOARD not in self.services:
            return None
        host = self.settings.dashboard_host
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.settings.dashboard_port}"

    def spawn(self, service: str, log_name: str | None = None) -> subprocess.Popen[bytes]:
        """One more process of ``service`` on this stack's servers (the way to scale out), connected to the
        embedded NATS as its own user, logging to ``logs/<log_name or service>.log``."""
        logs = self.settings.home / "logs"
        logs.mkdir(exist_ok=True)
        log_file = rotated(logs / f"{log_name or service}.log", self.settings.service_log_max_bytes).open("ab")
        env = self.service_env()
        if self.nats is not None and service != DASHBOARD:  # the dashboard acts as the operator
            env["TOOLSEL_NATS_URL"] = self.nats.login(service)
        return subprocess.Popen(
            [*SERVICE_COMMAND, service],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )

    def servers(self) -> dict[str, EmbeddedNats | EmbeddedPostgres]:
        """The servers this stack started itself (an external one is not its to restart)."""
        started = {"nats": self.nats, "postgres": self.postgres}
        return {name: server for name, server in started.items() if server is not None}

    def write_stack_file(self) -> None:
        assert self.endpoints is not None
        info = {
            "pid": os.getpid(),
            "nats_url": self.nats.url if self.nats is not None else self.endpoints.nats_url,
            "nats_embedded": self.nats is not None,
            "database_url": self.endpoints.database_url,
            "services": {n: p.pid for n, p in self.services.items()},
            "servers": {n: server.pid for n, server in self.servers().items()},
            "restarts": {n: s.restarts for n, s in self.supervision.items()},
            "down": {n: s.last_error or "restarting" for n, s in self.supervision.items() if s.down_since},
            "dashboard_url": self.dashboard_url(),
        }
        write_private(self.settings.home / STACK_FILE, json.dumps(info, indent=2))

    def start_failure(self, dead: list[str]) -> str:
        """Why the stack did not start: each dead service's exit code and the end of its log, so a failure in
        a run nobody can log into (CI) says what happened."""
        logs = self.settings.home / "logs"
        lines = [f"services did not start ({', '.join(dead) or 'timeout'}); see {logs}"]
        for name in dead:
            log = logs / f"{name}.log"
            tail = log.read_text(errors="replace").splitlines()[-START_LOG_LINES:] if log.exists() else []
            lines += [f"--- {name} exited with {self.services[name].returncode}; its log ends:", *tail]
        return "\n".join(lines)

    def dead_services(self) -> list[str]:
        return [name for name, proc in self.services.items() if proc.poll() is not None]

    def dead_parts(self) -> list[str]:
        """Dead servers, then dead services: a service restarted before its server would only fail again."""
        return [name for name, server in self.servers().items() if not server.running()] + self.dead_services()

    def supervise(self) -> list[str]:
        """Restart each server or service that has died once its backoff has passed; returns those restarted
        now. A restart that fails counts as a quick exit (the next waits longer). Call it from the thread that
        started the stack (children die with the thread that started them)."""
        now, restarted = time.monotonic(), []
        first_s, max_s = self.settings.restart_backoff_s, self.settings.restart_backoff_max_s
        for name in self.dead_parts():
            state = self.supervision[name]
            if state.due is None:  # just found dead: a run shorter than the longest wait counts as quick
                quick = now - state.started_at < max_s
                state.due = now + restart_delay(state.quick_exits if quick else 0, first_s, max_s)
                state.quick_exits = state.quick_exits + 1 if quick else 0
                state.down_since = state.down_since or now
            if now >= state.due:
                state.started_at, state.due = time.monotonic(), None
                try:
                    self.restart(name)
                except Exception as error:  # the supervisor stays up whatever a start raises: it tries again
                    state.last_error = why_down(error)
                    self.write_stack_file()
                    continue
                back = time.monotonic()
                state.restarts, state.last_error = state.restarts + 1, None
                state.last_down_s, state.down_since = back - (state.down_since or back), None
                restarted.append(name)
        if restarted:
            self.write_stack_file()
        return restarted

    def restart(self, name: str) -> None:
        """Start ``name`` (a server or a service) again."""
        if name == "nats" and self.nats is not None:
            self.nats.start()
        elif name == "postgres" and self.postgres is not None:
            self.postgres.restart()
        else:
            self.services[name] = self.spawn(name)

    def stop_services(self) -> None:
        """Stop the services (SIGTERM, then SIGKILL after ``stop_wait_s``), leaving the servers up."""
        for proc in self.services.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + stop_wait_s(self.settings)
        for proc in self.services.values():
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop(self) -> None:
        """Stop what this stack started, in reverse order; a stack that never got the home's lock stops nothing."""
        if self.lock is None:
            return
        (self.settings.home / STACK_FILE).unlink(missing_ok=True)
        self.stop_services()
        if self.postgres is not None:
            self.postgres.stop()
        if self.nats is not None:
            self.nats.stop()
        self.lock.close()
        self.lock = None


TEMPORARY_STACK_START_S = 300.0
"""How long a tool's stack of its own (``temporary_stack``) may take until every service answers: a fresh home
initialises PostgreSQL and loads the model cold."""
UNSET = ("TOOLSEL_PLUGIN_SECRETS", "TOOLSEL_REQUIRE_PLUGIN_CREDENTIALS", "TOOLSEL_SIGNED_PLUGINS")
"""The shell's plugin credentials, never passed to a temporary stack's services (no plugin credentials required)."""


@asynccontextmanager
async def temporary_stack(
    env: Mapping[str, str], prefix: str, before_start: Callable[[Settings], Awaitable[None]] | None = None
) -> AsyncIterator[tuple[Endpoints, Stack]]:
    """(its endpoints, the stack): a fresh stack on servers of its own in a temporary home (named ``prefix``...),
    its services started with ``env`` set and ``UNSET`` unset, stopped on leaving; the process's environment is
    restored then. ``before_start`` runs once the home is there, before anything starts in it."""
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix=prefix) as home:
        os.environ.update(env)
        for name in UNSET:
            os.environ.pop(name, None)
        settings = Settings(home=Path(home), nats_url=None, database_url=None)
        stack = Stack(settings)
        try:
            if before_start is not None:
                await before_start(settings)
            yield await stack.start(timeout_s=TEMPORARY_STACK_START_S), stack
        finally:
            stack.stop()
            os.environ.clear()
            os.environ.update(saved)
