"""A sync too large for one NATS message arrives in parts: each is staged in PostgreSQL under its sender's scope
(so any indexer of the queue group may take any part, and no other sender can touch it), and the same sender's
upload request joins them, checks the size and digest of the whole, and hands the payload to the sync as if it
had come in one message."""

import hashlib
import json
from typing import Any

from toolsel.contracts import ErrorCode, SyncPart, SyncPartReceived, SyncUpload
from toolsel.contracts.identity import Scope
from toolsel.messaging import RequestError
from toolsel.services.indexer.state import IndexerState
from toolsel.store import uploads


def too_large(size: int, limit: int) -> RequestError:
    return RequestError(
        ErrorCode.INVALID_REQUEST,
        f"the sync is {size:,} bytes, over the limit of {limit:,} (TOOLSEL_SYNC_MAX_BYTES)",
        "size",
    )


async def stage_part(state: IndexerState, part: SyncPart, scope: Scope) -> SyncPartReceived:
    """Keep one part, refusing an upload that would grow past the sync limit, and a part that would take its
    sender's staged bytes over all its uploads past ``TOOLSEL_SYNC_STAGED_MAX_BYTES``. Expired uploads go first.
    Parts are kept per sender: no one else can add to, replace or complete another's upload."""
    limit, held = state.settings.sync_max_bytes, state.settings.sync_staged_max_bytes
    async with state.pool.acquire() as conn, conn.transaction():
        await uploads.forget_expired(conn, state.settings.sync_upload_ttl_s)
        await uploads.lock_sender(conn, scope.token)
        staged = await uploads.staged_bytes(conn, scope.token, part.upload_id, part.part) + len(part.data)
        if staged > limit:
            raise too_large(staged, limit)
        kept = await uploads.sender_bytes(conn, scope.token, part.upload_id, part.part) + len(part.data)
        if kept > held:
            raise RequestError(
                ErrorCode.INVALID_REQUEST,
                f"uploads not yet completed would hold {kept:,} bytes, over the limit of {held:,} "
                "(TOOLSEL_SYNC_STAGED_MAX_BYTES): complete them, or wait until they expire",
                "data",
            )
        await uploads.stage(conn, scope.token, part.upload_id, part.part, part.data)
    return SyncPartReceived(upload_id=part.upload_id, part=part.part, staged_bytes=staged)


def joined(parts: dict[int, bytes], upload: SyncUpload) -> bytes:
    """The parts in order, when they are exactly the ones announced and make the announced whole."""
    missing = sorted(set(range(upload.parts)) - set(parts))
    if missing or len(parts) != upload.parts:
        raise RequestError(
            ErrorCode.INVALID_REQUEST,
            f"upload {upload.upload_id} has {len(parts)} of {upload.parts} parts (missing {missing[:5]}, or expired)",
            "parts",
        )
    whole = b"".join(parts[i] for i in range(upload.parts))
    if len(whole) != upload.size or hashlib.sha256(whole).hexdigest() != upload.sha256:
        raise RequestError(ErrorCode.INVALID_REQUEST, "the joined parts do not match size and sha256", "sha256")
    return whole


async def uploaded_payload(state: IndexerState, upload: SyncUpload, scope: Scope) -> dict[str, Any]:
    """The payload of a complete upload (its parts leave the stage whether or not it is valid)."""
    if upload.size > state.settings.sync_max_bytes:
        raise too_large(upload.size, state.settings.sync_max_bytes)
    async with state.pool.acquire() as conn:
        whole = joined(await uploads.take(conn, scope.token, upload.upload_id), upload)
    try:
        payload = json.loads(whole)
    except ValueError as error:
        raise RequestError(ErrorCode.INVALID_REQUEST, f"the upload is not JSON: {error}", "upload_id") from error
    if not isinstance(payload, dict):
        raise RequestError(ErrorCode.INVALID_REQUEST, "the upload must be a JSON object", "upload_id")
    return payload
