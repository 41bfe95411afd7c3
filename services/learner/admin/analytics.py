"""Analytics admin: the event history of a window read from the store, measured with polars."""

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
from toolsel.messaging import check_admin
from toolsel.services.learner.admin import QUEUE
from toolsel.services.learner.state import LearnerState

PREFIX = f"{subjects.ADMIN_PREFIX}.analytics."
R = TypeVar("R", bound=BaseModel)
Handler = Callable[..., Awaitable[Any]]


def router(state: LearnerState) -> NatsRouter:
    analytics = NatsRouter(prefix=PREFIX)

    async def answer(query: AnalyticsQuery, measure: Callable[[pl.DataFrame, pl.DataFrame], R]) -> R:
        """Read the window's selections and outcomes and measure them."""
        check_admin(query.admin_token, state.settings.admin_token)
        selections = await from_store(state.pool, "selections", query.since, query.until)
        outcomes = await from_store(state.pool, "outcomes", query.since, query.until)
        return await asyncio.to_thread(measure, selections, outcomes)  # seconds over a long history: not on the loop

    def subscriber(subject: str, description: str) -> Callable[[Handler], Any]:
        title = subject.removeprefix(f"{subjects.RPC_PREFIX}.")
        return analytics.subscriber(subject.removeprefix(PREFIX), queue=QUEUE, title=title, description=description)

    @subscriber(subjects.ADMIN_ANALYTICS_METRICS, "Selection metrics over a window of the event history.")
    async def metrics(request: AnalyticsQuery) -> SelectionMetrics:
        return await answer(request, replies.metrics_reply)

    @subscriber(subjects.ADMIN_ANALYTICS_HEATMAP, "Tool x page selection counts over a window.")
    async def heatmap(request: AnalyticsQuery) -> Heatmap:
        return await answer(request, replies.heatmap_reply)

    @subscriber(
        subjects.ADMIN_ANALYTICS_ACCURACY, "Daily retrieval accuracy: outcomes whose called tools were selected."
    )
    async def accuracy(request: AnalyticsQuery) -> AccuracyTrend:
        return await answer(request, replies.accuracy_reply)

    @subscriber(
        subjects.ADMIN_ANALYTICS_REVIEWS,
        "The review log watched: verdicts per day, spikes of broken ones, the tools whose reviews turned.",
    )
    async def reviews(request: AnalyticsQuery) -> ReviewTrend:
        check_admin(request.admin_token, state.settings.admin_token)
        log = await from_store(state.pool, "reviews", request.since, request.until)
        return replies.review_reply(log, state.settings)

    return analytics
