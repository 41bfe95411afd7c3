"""Admin ``embeddings.recompute`` and ``drift``: which vectors drifted, and recomputing them."""

import time

from faststream.nats import NatsRouter

from toolsel.contracts import DriftReport, DriftRequest, RecomputeReport, RecomputeRequest, subjects
from toolsel.services.indexer.admin.area import AdminArea
from toolsel.services.indexer.embedding import drift_report, mark_for_recompute
from toolsel.services.indexer.state import State


def router() -> NatsRouter:
    area = AdminArea(subjects.ADMIN_EMBEDDINGS_PREFIX)

    @area.handler(
        subjects.ADMIN_EMBEDDINGS_RECOMPUTE, "Re-embed missing, stale and drifted tools (all in scope with force)."
    )
    async def embeddings_recompute(request: RecomputeRequest, state: State) -> RecomputeReport:
        started = time.perf_counter()
        marked = await mark_for_recompute(state.pool, request, state.settings.drift_days)
        embedded = await state.embed(request.plugin_id)
        if embedded:
            await state.changed(request.plugin_id or "*", "recompute")
        return RecomputeReport(marked=marked, embedded=embedded, duration_ms=(time.perf_counter() - started) * 1000)

    @area.handler(subjects.ADMIN_DRIFT, "Tools whose vector is missing, stale or older than drift_days.")
    async def drift(request: DriftRequest, state: State) -> DriftReport:
        return await drift_report(state.pool, request, state.settings.drift_days)

    return area.router
