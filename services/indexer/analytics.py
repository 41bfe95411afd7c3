"""Analytics admin requests: the event history of a window read from the store, measured with polars."""

from collections.abc import Callable
from typing import TypeVar

import asyncpg
import polars as pl
from pydantic import BaseModel

from contracts.admin import AnalyticsQuery
from toolsel.analytics.load import from_store

R = TypeVar("R", bound=BaseModel)


async def answer(pool: asyncpg.Pool, query: AnalyticsQuery, measure: Callable[[pl.DataFrame, pl.DataFrame], R]) -> R:
    """Read the window's selections and outcomes and measure them."""
    selections = await from_store(pool, "selections", query.since, query.until)
    return measure(selections, await from_store(pool, "outcomes", query.since, query.until))
