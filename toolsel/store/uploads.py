"""Staged parts of syncs too large for one NATS message: migration 015's ``sync_uploads``. The only module that
writes it; the indexer stages each part, then takes the whole upload once it is complete."""

from uuid import UUID

import asyncpg

FORGET_EXPIRED = "DELETE FROM sync_uploads WHERE received_at < now() - make_interval(secs => $1)"
STAGED_BYTES = """
SELECT coalesce(sum(octet_length(data)), 0) FROM sync_uploads WHERE sender = $1 AND upload_id = $2 AND part <> $3
"""
SENDER_BYTES = """
SELECT coalesce(sum(octet_length(data)), 0) FROM sync_uploads
WHERE sender = $1 AND NOT (upload_id = $2 AND part = $3)
"""
LOCK_SENDER = "SELECT pg_advisory_xact_lock(hashtext('sync_uploads:' || $1))"
STAGE = """
INSERT INTO sync_uploads (sender, upload_id, part, data) VALUES ($1, $2, $3, $4)
ON CONFLICT (sender, upload_id, part) DO UPDATE SET data = EXCLUDED.data, received_at = now()
"""
TAKE = "DELETE FROM sync_uploads WHERE sender = $1 AND upload_id = $2 RETURNING part, data"


async def forget_expired(conn: asyncpg.Connection, ttl_s: float) -> None:
    """Drop the parts of uploads that were never completed within ``ttl_s``."""
    await conn.execute(FORGET_EXPIRED, ttl_s)


async def staged_bytes(conn: asyncpg.Connection, sender: str, upload_id: UUID, besides_part: int) -> int:
    """Bytes ``sender`` staged for the upload in parts other than ``besides_part`` (which a resend replaces)."""
    total: int = await conn.fetchval(STAGED_BYTES, sender, upload_id, besides_part)
    return total


async def sender_bytes(conn: asyncpg.Connection, sender: str, upload_id: UUID, besides_part: int) -> int:
    """Bytes ``sender`` holds staged over all its uploads, but for the part a resend replaces."""
    total: int = await conn.fetchval(SENDER_BYTES, sender, upload_id, besides_part)
    return total


async def lock_sender(conn: asyncpg.Connection, sender: str) -> None:
    """Hold ``sender``'s parts for the transaction: two parts it sends at once are counted one after the other."""
    await conn.execute(LOCK_SENDER, sender)


async def stage(conn: asyncpg.Connection, sender: str, upload_id: UUID, part: int, data: bytes) -> None:
    """Keep one part of ``sender``'s upload (a part sent twice keeps its last copy)."""
    await conn.execute(STAGE, sender, upload_id, part, data)


async def take(conn: asyncpg.Connection, sender: str, upload_id: UUID) -> dict[int, bytes]:
    """``sender``'s upload's parts by number, removed from the stage."""
    return {r["part"]: bytes(r["data"]) for r in await conn.fetch(TAKE, sender, upload_id)}
