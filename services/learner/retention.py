"""What the learner keeps, bounded: a pass every ``retention_interval_s`` drops the credits rows no actor will spend
again and the event history past ``history_retention_days`` (``toolsel.store.retention``), in the background,
never on an event's path."""

import logging

import asyncpg

from toolsel.settings import Settings
from toolsel.store import retention
from toolsel.store.learning import prune_credits

log = logging.getLogger("toolsel.learner")


def prunes(settings: Settings) -> bool:
    """Whether a pass has anything to drop: credits refill by windows, or the history is kept for a while only."""
    return settings.learning_credits_window_s > 0 or settings.history_retention_days > 0


async def prune(pool: asyncpg.Pool, settings: Settings) -> dict[str, int]:
    """One pass; the rows dropped per table. Credits refill with each window of an actor's selections, so a row
    untouched for two windows is never spent again: the tables kept a row for every anonymous call and every day
    of every actor, for good."""
    dropped: dict[str, int] = {}
    if settings.learning_credits_window_s > 0:
        dropped["credits"] = await prune_credits(pool, 2 * settings.learning_credits_window_s)
    if settings.history_retention_days > 0:
        kept, batch = settings.history_retention_days, settings.retention_batch_rows
        dropped |= await retention.prune_history(pool, kept, batch)
    return dropped


async def prune_logged(pool: asyncpg.Pool, settings: Settings) -> None:
    """One pass, what it dropped logged."""
    dropped = await prune(pool, settings)
    if any(dropped.values()):
        log.info("dropped past keeping: %s", ", ".join(f"{n} {table}" for table, n in dropped.items() if n))
