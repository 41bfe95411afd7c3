"""``toolsel up``: the embedded servers (or the configured ones) plus the three services as child processes.

The running stack writes ``stack.json`` in the home directory so other commands find it; a file left by a
crashed run is recognised by its dead pid and ignored.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from contracts import HealthReply, subjects
from toolsel.client import ToolselClient
from toolsel.embedded import EmbeddedNats, EmbeddedPostgres, die_with_parent
from toolsel.settings import Settings

STACK_FILE = "stack.json"
TOOLSEL_COMMAND = (sys.executable, "-m", "cli")
"""The ``toolsel`` command line for a child process (``+ ("selector",)`` runs a selector): a command line, not
an import, so the shared runtime never imports the CLI or a service."""


async def health_all(client: ToolselClient, services: tuple[str, ...]) -> dict[str, HealthReply | str]:
    """Each service's health reply, or why it did not answer."""
    replies: dict[str, HealthReply | str] = {}
    for service in services:
        try:
            replies[service] = await client.health(service)
        except Exception as error:
            replies[service] = type(error).__name__
    return replies


@dataclass
class Endpoints:
    nats_url: str
    database_url: str


def running_stack(home: Path) -> Endpoints | None:
    """The endpoints of a ``toolsel up`` that is still alive, if any."""
    path = home / STACK_FILE
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not psutil.pid_exists(int(info.get("pid", -1))):
        path.unlink(missing_ok=True)
        return None
    return Endpoints(info["nats_url"], info["database_url"])


def configured_endpoints(settings: Settings) -> Endpoints | None:
    """Explicit URLs from the environment win; else a running stack; else None (start one)."""
    if settings.nats_url and settings.database_url:
        return Endpoints(settings.nats_url, settings.database_url)
    return running_stack(settings.home)


@dataclass
class Stack:
    """Servers and services started by this process, stopped in reverse order."""

    settings: Settings
    nats: EmbeddedNats | None = None
    postgres: EmbeddedPostgres | None = None
    services: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    endpoints: Endpoints | None = None

    async def start(self, timeout_s: float = 120) -> Endpoints:
        """Servers, migrations, services; returns once every service answers its health request."""
        from toolsel.store import migrate

        endpoints = self.start_servers()  # in this thread: children die with the thread that started them
        await migrate(endpoints.database_url)
        self.start_services()
        async with ToolselClient(endpoints.nats_url) as client:
            deadline = time.monotonic() + timeout_s
            while not all(isinstance(r, HealthReply) for r in (await health_all(client, subjects.SERVICES)).values()):
                dead = self.dead_services()
                if dead or time.monotonic() > deadline:
                    logs = self.settings.home / "logs"
                    raise RuntimeError(f"services did not start ({', '.join(dead) or 'timeout'}); see {logs}")
                await asyncio.sleep(0.2)
        self.write_stack_file()
        return endpoints

    def start_servers(self) -> Endpoints:
        home = self.settings.home
        home.mkdir(parents=True, exist_ok=True)
        nats_url = self.settings.nats_url
        if not nats_url:
            self.nats = EmbeddedNats(home / "nats")
            nats_url = self.nats.start()
        database_url = self.settings.database_url
        if not database_url:
            self.postgres = EmbeddedPostgres(home / "pg")
            database_url = self.postgres.start()
        self.endpoints = Endpoints(nats_url, database_url)
        return self.endpoints

    def service_env(self) -> dict[str, str]:
        assert self.endpoints is not None
        return {
            **os.environ,
            "TOOLSEL_NATS_URL": self.endpoints.nats_url,
            "TOOLSEL_DATABASE_URL": self.endpoints.database_url,
            "TOOLSEL_HOME": str(self.settings.home),
        }

    def start_services(self) -> None:
        for name in subjects.SERVICES:
            self.services[name] = self.spawn(name)

    def spawn(self, service: str, log_name: str | None = None) -> subprocess.Popen[bytes]:
        """One more process of ``service`` on this stack's servers (the way to scale out), logging to
        ``logs/<log_name or service>.log``."""
        logs = self.settings.home / "logs"
        logs.mkdir(exist_ok=True)
        log_file = (logs / f"{log_name or service}.log").open("ab")
        return subprocess.Popen(
            [*TOOLSEL_COMMAND, service],
            env=self.service_env(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )

    def write_stack_file(self) -> None:
        assert self.endpoints is not None
        (self.settings.home / STACK_FILE).write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "nats_url": self.endpoints.nats_url,
                    "database_url": self.endpoints.database_url,
                    "services": {n: p.pid for n, p in self.services.items()},
                },
                indent=2,
            )
        )

    def dead_services(self) -> list[str]:
        return [name for name, proc in self.services.items() if proc.poll() is not None]

    def stop(self) -> None:
        (self.settings.home / STACK_FILE).unlink(missing_ok=True)
        for proc in self.services.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.services.values():
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.postgres is not None:
            self.postgres.stop()
        if self.nats is not None:
            self.nats.stop()
