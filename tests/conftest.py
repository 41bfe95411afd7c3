"""Shared fixtures. Integration tests start one real stack per session: embedded NATS with JetStream, embedded
PostgreSQL with pgvector, and the three services as child processes with the real embedding model.

Every temporary file of the run (pytest's own, the stacks' homes, what child processes write) goes under one
directory that is removed when the run ends: the tests leave nothing in the system's temporary directory."""

import asyncio
import atexit
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import asyncpg
import pytest

from toolsel.client import ToolselClient
from toolsel.settings import Settings
from toolsel.stack import Endpoints, Stack
from toolsel.store import create_pool

PLUGIN_SECRETS = {"guarded": "s3cret"}
"""Plugins that must prove themselves in the integration stack."""
RUN_TEMP = "TOOLSEL_TEST_RUN_TEMP"
"""Names, in the environment, the temporary directory of the run (a pytest started inside it keeps to it)."""


def pytest_configure(config: pytest.Config) -> None:
    """Point ``tempfile`` (and, through TMPDIR, every child process) at a directory of this run's own, removed
    at exit. It is readable by others: PostgreSQL runs as another user when the tests run as root."""
    if RUN_TEMP in os.environ:
        return
    root = tempfile.mkdtemp(prefix="toolsel-tests-")
    os.chmod(root, 0o755)
    os.environ[RUN_TEMP] = os.environ["TMPDIR"] = tempfile.tempdir = root
    # registered before the embedded PostgreSQL's own exit handler, so it runs after it (atexit runs the last
    # registered first): that handler still takes a lock file in the temporary directory
    atexit.register(shutil.rmtree, root, ignore_errors=True)


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    yield from running_stack()


def running_stack() -> Iterator[Stack]:
    """A whole stack in a fresh home, stopped when the generator closes."""
    home = Path(tempfile.mkdtemp(prefix="toolsel-test-"))
    env = {
        "TOOLSEL_PLUGIN_SECRETS": json.dumps(PLUGIN_SECRETS),
        "TOOLSEL_ORPHAN_TIMEOUT_S": "8",
        "TOOLSEL_TOOL_LIST_CACHE_TTL_S": "3600",
        "TOOLSEL_ADMIN_TOKEN": "test-admin-token",
        "TOOLSEL_DASHBOARD_PORT": "0",  # the dashboard's tests start their own, on a free port
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    running = Stack(Settings(home=home, nats_url=None, database_url=None))
    try:
        asyncio.run(running.start())
        yield running
    finally:
        running.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def endpoints(stack: Stack) -> Endpoints:
    assert stack.endpoints is not None
    return stack.endpoints


@pytest.fixture
async def client(endpoints: Endpoints) -> AsyncIterator[ToolselClient]:
    """A client as the NATS operator (the stack's own user): tests also replay selection events, force
    reloads and read the streams, which agents may not (test_nats_auth checks what each user may do)."""
    async with ToolselClient(endpoints.nats_url) as connected:
        yield connected


@pytest.fixture(scope="session")
async def pool(endpoints: Endpoints) -> AsyncIterator[asyncpg.Pool]:
    connections = await create_pool(endpoints.database_url)
    yield connections
    await connections.close()


@contextlib.asynccontextmanager
async def scratch_database(endpoints: Endpoints) -> AsyncIterator[str]:
    """A new database on the stack's server, dropped afterwards."""
    name = f"scratch_{uuid4().hex[:12]}"
    server = await asyncpg.connect(endpoints.database_url)
    await server.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(endpoints.database_url)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    await server.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await server.close()


@pytest.fixture
async def empty_database(endpoints: Endpoints) -> AsyncIterator[str]:
    """A new database on the stack's server, dropped afterwards."""
    async with scratch_database(endpoints) as url:
        yield url
