"""Which model made the stored vectors: migration 013's ``embedding_space``, one row. The only module that writes
it."""

import asyncpg

RECORDED = "SELECT model, dim FROM embedding_space"
CLAIM = "INSERT INTO embedding_space (model, dim) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING"
HAS_VECTORS = "SELECT EXISTS (SELECT 1 FROM tools WHERE embedding IS NOT NULL)"
RECORD = """
INSERT INTO embedding_space (model, dim) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET model = EXCLUDED.model, dim = EXCLUDED.dim, recorded_at = now()
"""


async def recorded(conn: asyncpg.Connection) -> tuple[str, int] | None:
    """The model the stored vectors come from and its size; None before any service recorded one."""
    row = await conn.fetchrow(RECORDED)
    return None if row is None else (str(row["model"]), int(row["dim"]))


async def recorded_at(dsn: str, timeout_s: float = 30) -> tuple[str, int] | None:
    """``recorded`` of the store at ``dsn``, on a connection of its own: a client's one read (the evaluation's, of
    the model that served it), which neither migrates nor keeps a pool."""
    conn = await asyncpg.connect(dsn, timeout=timeout_s)
    try:
        return await recorded(conn)
    finally:
        await conn.close(timeout=timeout_s)


async def claim(
    conn: asyncpg.Connection, model: str, dim: int, unrecorded: tuple[str, int] | None = None
) -> tuple[str, int]:
    """The model the stored vectors come from and its size, one recorded first when none is: this one for a new
    store; for one from before the record that holds vectors already, ``unrecorded`` where given (the model the
    services of that time made them with), else this one."""
    if unrecorded is not None and await recorded(conn) is None and await conn.fetchval(HAS_VECTORS):
        model, dim = unrecorded
    await conn.execute(CLAIM, model, dim)
    found = await recorded(conn)
    assert found is not None
    return found


async def record(conn: asyncpg.Connection, model: str, dim: int) -> None:
    """From now on the stored vectors are this model's (the caller has cleared the other model's)."""
    await conn.execute(RECORD, model, dim)
