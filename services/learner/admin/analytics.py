"""Analytics admin: the event history of a window read from the store: counts the database makes (metrics, the
heatmap's cells), the rest measured with polars; nothing of it on the event loop but the waiting."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import polars as pl
from faststream.nats import NatsRouter
from pydantic import BaseModel

from toolsel.analytics import replies
from toolsel.analytics.load import from_store
from toolsel.contracts import subjects
from toolsel.contracts.admin import AccuracyTrend, AnalyticsQuery, Heatmap, ReviewTrend, SelectionMetrics
from toolsel.messaging import check_admin, room
from toolsel.services.learner.admin import QUEUE
from toolsel.services.learner.state import LearnerState
from toolsel.store import readmodels

PREFIX = f"{subjects.ADMIN_PREFIX}.analytics."
R = TypeVar("R", bound=BaseModel)
Handler = Callable[..., Awaitable[Any]]


def router(state: LearnerState) -> NatsRouter:
    analytics = NatsRouter(prefix=PREFIX)

    async def read(query: AnalyticsQuery, *tables: str) -> list[pl.DataFrame]:
        """The window's tables, decoded off the event loop (``from_store``)."""
        check_admin(query.admin_token, state.settings.admin_token)
        return [await from_store(state.pool, t, query.since, query.until, tenant=query.tenant_id) for t in tables]

    def subscriber(subject: str, description: str) -> Callable[[Handler], Any]:
        title = subject.removeprefix(f"{subjects.RPC_PREFIX}.")
        return analytics.subscriber(subject.removeprefix(PREFIX), queue=QUEUE, title=title, description=description)

    @subscriber(subjects.ADMIN_ANALYTICS_METRICS, "Selection metrics over a window of the event history.")
    async def metrics(request: AnalyticsQuery) -> SelectionMetrics:
        check_admin(request.admin_token, state.settings.admin_token)
        counted = await readmodels.selection_metrics(state.pool, request.since, request.until, request.tenant_id)
        return replies.counted_metrics_reply(counted)

    @subscriber(subjects.ADMIN_ANALYTICS_HEATMAP, "Tool x page selection counts over a window.")
    async def heatmap(request: AnalyticsQuery) -> Heatmap:
        check_admin(request.admin_token, state.settings.admin_token)
        cells = await readmodels.heatmap_cells(state.pool, request.since, request.until, request.tenant_id)
        fits = room(getattr(state.broker.connection, "max_payload", None))
        return await asyncio.to_thread(replies.counted_heatmap_reply, cells, request.tools, request.pages, fits)

    @subscriber(
        subjects.ADMIN_ANALYTICS_ACCURACY, "Daily retrieval accuracy: outcomes whose called tools were selected."
    )
    async def accuracy(request: AnalyticsQuery) -> AccuracyTrend:
        selections, outcomes = await read(request, "selections", "outcomes")
        return await asyncio.to_thread(replies.accuracy_reply, selections, outcomes)

    @subscriber(
        subjects.ADMIN_ANALYTICS_REVIEWS,
        "The review log watched: verdicts per day, spikes of broken ones, the tools whose reviews turned.",
    )
    async def reviews(request: AnalyticsQuery) -> ReviewTrend:
        (log,) = await read(request, "reviews")
        return await asyncio.to_thread(replies.review_reply, log, state.settings)

    return analytics
