"""What the indexer keeps, bounded: a pass every ``retention_interval_s`` drops each tool's versions beyond the
newest ``tool_versions_kept`` and the last-sync records of removed plugins past ``history_retention_days``
(``toolsel.store.retention``), in the background, never on a sync's path."""

import logging

import asyncpg

from toolsel.settings import Settings
from toolsel.store import retention

log = logging.getLogger("toolsel.indexer")


def prunes(settings: Settings) -> bool:
    """Whether a pass has anything to drop: versions are bounded, or sync records are kept for a while only."""
    return settings.tool_versions_kept > 0 or settings.history_retention_days > 0


async def prune(pool: asyncpg.Pool, settings: Settings) -> dict[str, int]:
    """One pass; the rows dropped per table."""
    dropped: dict[str, int] = {}
    batch = settings.retention_batch_rows
    if settings.tool_versions_kept > 0:
        dropped["tool versions"] = await retention.prune_versions(pool, settings.tool_versions_kept, batch)
    if settings.history_retention_days > 0:
        dropped["sync records"] = await retention.prune_sync_records(pool, settings.history_retention_days, batch)
    return dropped


async def prune_logged(pool: asyncpg.Pool, settings: Settings) -> None:
    """One pass, what it dropped logged."""
    dropped = await prune(pool, settings)
    if any(dropped.values()):
        log.info("dropped past keeping: %s", ", ".join(f"{n} {table}" for table, n in dropped.items() if n))
