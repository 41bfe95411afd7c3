"""The tools' vectors: embedding those that wait for one, and finding and marking those that drifted."""

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import asyncpg

from toolsel.contracts import DriftEntry, DriftReport, DriftRequest, RecomputeRequest
from toolsel.embedder import Embedder
from toolsel.services.indexer.drift import days_since, drift_reason
from toolsel.services.indexer.hashing import stored_spec
from toolsel.services.indexer.tool2vec import tool_vectors
from toolsel.store import registry
from toolsel.store.registry import Conn

PAGE = 2_000
"""Pending tools read per pass: bounds what a pass holds (rows, specs, texts, vectors) whatever the catalog, and
is enough texts for the model's length-sorted batches to carry little padding."""


TURN_TEXTS = 512
"""Texts the model reads in one turn (a tool's example queries each, else its text): passes running together (two
tenants' syncs) take turns at the model a slice this size at a time, so a small sync waits for a slice of a large
one rather than all of it (under a second of the model), while a slice is still long enough for its length-sorted
batches to carry little padding."""


class EmbedPass(NamedTuple):
    tools: int
    """Tools that got a vector."""
    model_s: float
    """Seconds spent computing the vectors (the rest of a pass is reading and writing the store)."""


async def embed_pending(
    pool: Conn,
    embedder: Embedder,
    turn: asyncio.Lock | None = None,
    plugin_id: str | None = None,
    page: int = PAGE,
) -> EmbedPass:
    """Re-embed every pending or stale tool (of one plugin, or every one), a page at a time, each page in slices of
    about ``TURN_TEXTS`` texts, one model call each, taken in ``turn`` (the lock passes running together share: an
    asyncio lock serves its waiters in order, so they alternate). The model runs in a worker thread, so the event
    loop keeps answering."""
    turn = turn or asyncio.Lock()
    done, model_s = 0, 0.0
    while rows := await registry.tools_to_embed(pool, page, plugin_id):
        specs = [stored_spec(r["spec"]) for r in rows]
        for start, end in slices([len(s.example_queries) or 1 for s in specs], TURN_TEXTS):
            async with turn:
                started = time.perf_counter()
                vectors = await asyncio.to_thread(tool_vectors, specs[start:end], embedder)
                model_s += time.perf_counter() - started
            kept = [(r["id"], vectors[i], r["embed_hash"]) for i, r in enumerate(rows[start:end])]
            await registry.store_vectors(pool, kept)
            done += len(kept)
    return EmbedPass(done, model_s)


def slices(texts: Sequence[int], most: int) -> list[tuple[int, int]]:
    """(start, end) of consecutive runs of tools whose texts (``texts``: each tool's count) add up to at most
    ``most``; a tool of more texts than that is a run of its own."""
    runs: list[tuple[int, int]] = []
    start, held = 0, 0
    for i, count in enumerate(texts):
        if held and held + count > most:
            runs.append((start, i))
            start, held = i, 0
        held += count
    if held:
        runs.append((start, len(texts)))
    return runs


async def drift_report(pool: asyncpg.Pool, request: DriftRequest, default_days: float) -> DriftReport:
    """Live tools (any status: a held-back tool needs a fresh vector before it returns) that drifted."""
    days = request.days or default_days
    rows = await registry.embedding_ages(pool, request.plugin_id)
    drifted = [e for e in (_drift_entry(r, r["now"], days) for r in rows) if e is not None]
    drifted.sort(key=lambda e: (e.days_since_embed is not None, -(e.days_since_embed or 0.0), e.plugin_id, e.name))
    return DriftReport(days=days, tools=drifted)


def _drift_entry(row: asyncpg.Record, now: datetime, days: float) -> DriftEntry | None:
    reason = drift_reason(row["embedding_status"], row["last_embedded_at"], now, days)
    if reason is None:
        return None
    fields: dict[str, Any] = {name: row[name] for name in ("plugin_id", "name", "embedding_status", "last_embedded_at")}
    return DriftEntry(**fields, days_since_embed=days_since(row["last_embedded_at"], now), reason=reason)


async def mark_for_recompute(pool: asyncpg.Pool, request: RecomputeRequest, drift_days: float) -> int:
    """Mark stale the vectors to recompute (every live one in scope when forced, else those too old); returns how
    many in scope the next embedding pass will take (these plus the missing and stale ones)."""
    if request.force:
        await registry.mark_all_stale(pool, request.plugin_id)
    else:
        report = await drift_report(pool, DriftRequest(plugin_id=request.plugin_id), drift_days)
        await registry.mark_stale(pool, [(t.plugin_id, t.name) for t in report.tools if t.reason == "old"])
    return await registry.waiting_for_embedding(pool, request.plugin_id)
