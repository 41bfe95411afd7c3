"""Selections and outcomes stored as the learner stores them (``toolsel.store.events``): a history of any size or
shape, at any time, without the selectors."""

from datetime import UTC, datetime

import asyncpg

from toolsel.contracts import OutcomeEvent, SelectedTool, SelectionEvent, ToolCall
from toolsel.store import events


def selection(tenant: str, page: str = "/inbox", at: datetime | None = None, tools: int = 2) -> SelectionEvent:
    """A selection of ``tools`` tools of the plugin ``hist`` (``tool_0``...) on ``page``, made ``at`` (now)."""
    picked = [SelectedTool(plugin_id="hist", name=f"tool_{i}", rank=i + 1, score=1.0) for i in range(tools)]
    return SelectionEvent(
        tenant_id=tenant,
        occurred_at=at or datetime.now(UTC),
        query="what's the weather",
        page=page,
        tier="free",
        context_key="free|*|/inbox",
        method="hybrid",
        tools=picked,
        candidate_count=10,
        latency_ms=float(len(page) % 7),
        tokens_selected=100,
        tokens_catalog=900,
    )


async def store(pool: asyncpg.Pool, selections: list[SelectionEvent], called: int = 0) -> None:
    """Store the selections, and an outcome that called the first tool of each of the first ``called``."""
    await events.insert_selections(pool, selections)
    outcomes = [
        OutcomeEvent(
            selection_id=s.selection_id,
            calls=[ToolCall(plugin_id="hist", name="tool_0", success=i % 3 != 0, latency_ms=5)],
        )
        for i, s in enumerate(selections[:called])
    ]
    async with pool.acquire() as conn:
        await events.insert_outcomes(conn, outcomes)
