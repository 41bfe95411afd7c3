"""The PostgreSQL store: a pool with pgvector's codec, and ordered, idempotent SQL migrations."""

import logging
from collections.abc import Iterable
from importlib import resources

import asyncpg
import numpy as np
import numpy.typing as npt
from pgvector import Vector
from pgvector.asyncpg import register_vector

log = logging.getLogger(__name__)

MIGRATIONS_LOCK = 7_433_001
"""Advisory lock id so several services starting at once migrate one at a time."""


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)


def vector_array(arrays: Iterable[npt.NDArray[np.float32] | None]) -> list[Vector | None]:
    """Vectors as a ``vector[]`` parameter takes them, in pgvector's binary form: as bare arrays asyncpg would
    take each for a dimension of a float array, and a flat float array is encoded value by value (five times
    slower)."""
    return [None if a is None else Vector(a) for a in arrays]


async def answers(dsn: str, timeout_s: float) -> None:
    """Connect and run a trivial query, or raise why PostgreSQL does not answer (``toolsel status``)."""
    connection = await asyncpg.connect(dsn, timeout=timeout_s)
    try:
        await connection.fetchval("SELECT 1", timeout=timeout_s)
    finally:
        await connection.close(timeout=timeout_s)


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 5) -> asyncpg.Pool:
    """A pool whose connections speak pgvector; migrations are applied first so the type exists."""
    await migrate(dsn)
    pool = await asyncpg.create_pool(
        dsn, min_size=min_size, max_size=max_size, init=_init_connection, command_timeout=30
    )
    assert pool is not None
    return pool


def migration_files() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every packaged migration, in order."""
    found = []
    for entry in resources.files("toolsel.migrations").iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


async def migrate(dsn: str, before: int | None = None) -> list[str]:
    """Apply the migrations not applied yet (with ``before``, only those of lower versions: the store as an older
    release left it, to upgrade from); returns the names applied."""
    conn = await asyncpg.connect(dsn)
    applied: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATIONS_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for version, name, sql in migration_files():
            if version in done or (before is not None and version >= before):
                continue
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name)
            applied.append(name)
            log.info("applied migration %s", name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATIONS_LOCK)
        await conn.close()
    return applied
