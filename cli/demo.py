"""The scenario of ``toolsel demo``: sync the packaged catalog, select, report outcomes, and show the ranking
move."""

import asyncio
import json
import time
from importlib import resources
from typing import Any

from rich.progress import track

from contracts import OutcomeEvent, PluginSync, SelectReply, ToolCall
from toolsel.client import ToolselClient
from toolsel.render import console, selection_table, sync_table

DEMO_QUERIES = (
    ("find me a cheap flight to Paris next week", "/travel"),
    ("what is the weather going to be like tomorrow", ""),
    ("convert this recipe to a shopping list", "/shop/cart"),
)
LEARNING_QUERY = ("book a hotel room in Rome for the weekend", "/travel")
ROUNDS = 25
LEARNING = ("relevance", "quality", "thompson", "alpha", "beta")
"""The parts of the score the demo shows: what the outcomes move."""


def demo_catalog() -> list[PluginSync]:
    """The packaged demo catalog (MetaTool plugin descriptions, MIT; see toolsel/demo/NOTICE.md)."""
    raw: dict[str, Any] = json.loads(resources.files("toolsel.demo").joinpath("catalog.json").read_text("utf-8"))
    return [PluginSync.model_validate(p) for p in raw["plugins"]]


async def _wait_for_learning(client: ToolselClient, query: str, page: str, key: str, alpha: float) -> SelectReply:
    """Poll (dry runs) until the selector reflects the learner's posterior for ``key``."""
    deadline = time.monotonic() + 30
    while True:
        reply = await client.select(query=query, page=page, dry_run=True, seed=7, k=10)
        seen = {f"{t.plugin_id}/{t.name}": t.breakdown.alpha for t in reply.tools}
        if seen.get(key, 0) >= alpha or time.monotonic() > deadline:
            return reply
        await asyncio.sleep(0.2)


async def run_demo(client: ToolselClient) -> None:
    reports = [await client.sync(p) for p in track(demo_catalog(), description="syncing the demo catalog")]
    console.print(sync_table(reports))
    for query, page in DEMO_QUERIES:
        reply = await client.select(query=query, page=page, dry_run=True, seed=1)
        console.print(selection_table(reply, f"{query!r} on page {page or '-'}"))

    query, page = LEARNING_QUERY
    before = await client.select(query=query, page=page, dry_run=True, seed=7, k=10)
    console.print(selection_table(before, f"before learning: {query!r}", LEARNING))
    first, second = [t for t in before.tools if not t.pinned][:2]
    console.print(
        f"The agent now runs {ROUNDS} times: [red]{first.name}[/] fails when called, [green]{second.name}[/] works."
    )
    wins = 0
    for _ in track(range(ROUNDS), description="selections and outcomes"):
        reply = await client.select(query=query, page=page)
        calls = [
            ToolCall(plugin_id=t.plugin_id, name=t.name, success=t.key == second.key, latency_ms=120.0)
            for t in reply.tools
            if t.key in {first.key, second.key}
        ]
        wins += sum(c.success for c in calls)
        await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=calls)])
    after = await _wait_for_learning(client, query, page, second.key, second.breakdown.alpha + wins)
    console.print(selection_table(after, f"after learning: {query!r}", LEARNING))
    rank = {t.key: i + 1 for i, t in enumerate(t for t in after.tools if not t.pinned)}
    console.print(
        f"Among the retrieved tools, {second.name} moved from 2nd to {rank.get(second.key, 'dropped')} and "
        f"{first.name} from 1st to {rank.get(first.key, 'dropped')}."
    )
