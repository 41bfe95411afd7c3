"""Learning admin: each tool's quality, the quarantine (listed and released) and people's feedback."""

from collections.abc import Awaitable, Callable
from typing import Any

from faststream.nats import NatsRouter

from toolsel.contracts import ErrorCode, QuarantineRelease, subjects
from toolsel.contracts.admin import (
    FeedbackEntry,
    FeedbackList,
    FeedbackQuery,
    QualityList,
    QualityQuery,
    QuarantineEntry,
    QuarantineList,
    QuarantineQuery,
    QuarantineReleased,
    ToolQuality,
)
from toolsel.messaging import RequestError, check_admin
from toolsel.services.learner.admin import QUEUE
from toolsel.services.learner.broadcast import announce
from toolsel.services.learner.quarantine import ReleaseRefused, release_tool
from toolsel.services.learner.state import LearnerState
from toolsel.store import readmodels

PREFIX = f"{subjects.ADMIN_PREFIX}."
Handler = Callable[..., Awaitable[Any]]


def _not_found(plugin_id: str | None, name: str | None) -> RequestError:
    return RequestError(ErrorCode.NOT_FOUND, f"no tool {plugin_id}/{name}", "name")


def router(state: LearnerState) -> NatsRouter:
    admin = NatsRouter(prefix=PREFIX)

    def subscriber(subject: str, title: str, description: str) -> Callable[[Handler], Any]:
        return admin.subscriber(subject.removeprefix(PREFIX), queue=QUEUE, title=title, description=description)

    @subscriber(
        subjects.ADMIN_QUALITY,
        "admin.quality",
        "One tool's quality metrics per tenant, or every tool not healthy for some tenant.",
    )
    async def quality(request: QualityQuery) -> QualityList:
        """One tool's quality per tenant, or every live tool not healthy for some tenant (worst rolling score
        first)."""
        check_admin(request.admin_token, state.settings.admin_token)
        if request.degraded:
            rows = await readmodels.unhealthy_tools(state.pool)
        else:
            assert request.plugin_id is not None  # the query's validator says so
            assert request.name is not None
            rows = await readmodels.tool_health(state.pool, request.plugin_id, request.name)
            if not rows:
                raise _not_found(request.plugin_id, request.name)
        return QualityList(tools=[ToolQuality(**r) for r in rows])

    @subscriber(
        subjects.ADMIN_QUARANTINE_LIST,
        "admin.quarantine.list",
        "Quarantined tools (and released ones when asked); the learner releases.",
    )
    async def quarantine_list(request: QuarantineQuery) -> QuarantineList:
        check_admin(request.admin_token, state.settings.admin_token)
        rows = await readmodels.quarantine_entries(state.pool, request.include_released)
        return QuarantineList(entries=[QuarantineEntry(**r) for r in rows])

    @subscriber(
        subjects.ADMIN_QUARANTINE_RELEASE,
        "quarantine-release",
        "An operator puts a quarantined tool on probation; the selectors take it back at once.",
    )
    async def quarantine_release(request: QuarantineRelease) -> QuarantineReleased:
        check_admin(request.admin_token, state.settings.admin_token)
        try:
            changes = await release_tool(
                state.pool, request.plugin_id, request.name, request.tenant_id, request.released_by, state.policy
            )
        except ReleaseRefused as refused:
            raise RequestError(refused.code, str(refused), "name") from refused
        await announce(state, changes)
        return QuarantineReleased(changes=changes)

    @subscriber(subjects.ADMIN_FEEDBACK_LIST, "admin.feedback.list", "A tool's most recent feedback from people.")
    async def feedback_list(request: FeedbackQuery) -> FeedbackList:
        """A tool's most recent feedback first (not_found for an unknown tool)."""
        check_admin(request.admin_token, state.settings.admin_token)
        if not await readmodels.tool_exists(state.pool, request.plugin_id, request.name):
            raise _not_found(request.plugin_id, request.name)
        rows = await readmodels.recent_feedback(state.pool, request.plugin_id, request.name, request.limit)
        feedback = [FeedbackEntry(**r) for r in rows]
        return FeedbackList(plugin_id=request.plugin_id, name=request.name, feedback=feedback)

    return admin
