"""Staged parts of syncs too large for one NATS message: migration 015's ``sync_uploads``. The only module that
writes it; the indexer stages each part, then takes the whole upload once it is complete."""

from uuid import UUID

import asyncpg

FORGET_EXPIRED = "DELETE FROM sync_uploads WHERE received_at < now() - make_interval(secs => $1)"
STAGED_BYTES = "SELECT coalesce(sum(octet_length(data)), 0) FROM sync_uploads WHERE upload_id = $1 AND part <> $2"
STAGE = """
INSERT INTO sync_uploads (upload_id, part, data) VALUES ($1, $2, $3)
ON CONFLICT (upload_id, part) DO UPDATE SET data = EXCLUDED.data, received_at = now()
"""
TAKE = "DELETE FROM sync_uploads WHERE upload_id = $1 RETURNING part, data"


async def forget_expired(conn: asyncpg.Connection, ttl_s: float) -> None:
    """Drop the parts of uploads that were never completed within ``ttl_s``."""
    await conn.execute(FORGET_EXPIRED, ttl_s)


async def staged_bytes(conn: asyncpg.Connection, upload_id: UUID, besides_part: int) -> int:
    """Bytes staged for the upload in parts other than ``besides_part`` (which a resend replaces)."""
    total: int = await conn.fetchval(STAGED_BYTES, upload_id, besides_part)
    return total


async def stage(conn: asyncpg.Connection, upload_id: UUID, part: int, data: bytes) -> None:
    """Keep one part (a part sent twice keeps its last copy)."""
    await conn.execute(STAGE, upload_id, part, data)


async def take(conn: asyncpg.Connection, upload_id: UUID) -> dict[int, bytes]:
    """The upload's parts by number, removed from the stage."""
    return {r["part"]: bytes(r["data"]) for r in await conn.fetch(TAKE, upload_id)}
