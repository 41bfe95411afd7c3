"""The scenario of ``toolsel demo``: sync the packaged catalog, select, report outcomes, show the ranking move and
say what it left behind; ``toolsel demo --reset`` removes it. Every demo plugin id starts with ``demo-`` and the
demo's tools belong to its own tenant, ``demo``: the demo never touches a plugin of the user's own, and its tools
(pinned ones included) never appear in the user's answers."""

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import asyncpg
from rich.progress import track

from toolsel.client import ToolselClient, ToolselError
from toolsel.contracts import SHARED_TENANT, OutcomeEvent, PluginSync, QuarantineEntry, SelectReply, ToolCall
from toolsel.render import console, selection_view, sync_table
from toolsel.services.learner.reward import discounted
from toolsel.settings import Settings
from toolsel.store import learning, usage
from toolsel.waiting import eventually

DEMO_QUERIES = (
    ("find me a cheap flight to Paris next week", "/travel"),
    ("what is the weather going to be like tomorrow", ""),
    ("convert this recipe to a shopping list", "/shop/cart"),
)
LEARNING_QUERY = ("book a hotel room in Rome for the weekend", "/travel")
ROUNDS = 25
LEARNING = ("relevance", "quality", "thompson", "alpha", "beta")
"""The parts of the score the demo shows: what the outcomes move."""
DEMO_PREFIX = "demo-"
"""Put before every plugin id of the packaged catalog: the demo's plugins are told apart from the user's."""
DEMO_TENANT = "demo"
"""The tenant the demo's tools are synced for and its selections are made as."""
CATALOG_WAIT_S = 60.0
"""How long the demo waits for the selector to serve the catalog it synced."""
LEARNING_WAIT_S = 30.0
"""How long the demo waits for the learner's posteriors to reach the selector."""
ALPHA_ROUNDING = 1e-6
"""How far below the expected alpha a posterior read back may be (float rounding on its way through the store)."""


def demo_catalog() -> list[PluginSync]:
    """The packaged demo catalog (MetaTool plugin descriptions, MIT; see toolsel/demo/NOTICE.md), its plugin ids
    prefixed with ``DEMO_PREFIX``."""
    raw: dict[str, Any] = json.loads(resources.files("toolsel.demo").joinpath("catalog.json").read_text("utf-8"))
    return [
        PluginSync.model_validate(p | {"plugin_id": DEMO_PREFIX + p["plugin_id"], "tenant_id": DEMO_TENANT})
        for p in raw["plugins"]
    ]


def learnt_alpha(alpha: float, wins: int, settings: Settings) -> float:
    """A tool's alpha after ``wins`` outcomes of one success each, as the learner updates it (``discounted``)."""
    for _ in range(wins):
        alpha = discounted(alpha, settings.prior_alpha, settings.posterior_discount, 1.0)
    return alpha


async def _wait_for_learning(
    client: ToolselClient, query: str, page: str, key: str, alpha: float
) -> tuple[SelectReply, bool]:
    """Poll (dry runs) until the selector reflects the learner's posterior for ``key`` (alpha at least ``alpha``,
    short of float rounding), and whether it did within ``LEARNING_WAIT_S``."""
    last: list[SelectReply] = []  # the latest reply, which the demo shows

    async def learnt() -> bool:
        reply = await client.select(query=query, page=page, dry_run=True, seed=7, k=10, tenant_id=DEMO_TENANT)
        last[:] = [reply]
        seen = {f"{t.plugin_id}/{t.name}": t.breakdown.alpha for t in reply.tools}
        return seen.get(key, 0) >= alpha - ALPHA_ROUNDING

    done = await eventually(learnt, LEARNING_WAIT_S, every_s=0.2)
    return last[0], done


async def _catalog_served(client: ToolselClient, version: int) -> bool:
    """Wait until the selector reports a catalog at least as new as ``version`` (the last sync's); False when it
    did not within ``CATALOG_WAIT_S``."""

    async def served() -> bool:
        return int((await client.health("selector")).details.get("catalog_version", 0)) >= version

    return await eventually(served, CATALOG_WAIT_S, every_s=0.2)


async def _forget_shared_copies(client: ToolselClient) -> None:
    """Remove the demo's tools that an earlier version of the demo synced for every tenant (``*``)."""
    for plugin in demo_catalog():
        await client.remove_plugin(plugin.plugin_id, SHARED_TENANT)


async def reset_demo(client: ToolselClient, pool: asyncpg.Pool) -> None:
    """Remove every demo plugin (tools soft-deleted, categories and page mappings dropped) and forget what the demo
    taught of their tools in its tenant: posteriors, quality, quarantine and learnt queries. A demo run after it
    starts where the first did."""
    await _forget_shared_copies(client)
    reports = [await client.remove_plugin(p.plugin_id, DEMO_TENANT) for p in demo_catalog()]
    async with pool.acquire() as conn, conn.transaction():
        forgotten = await learning.forget_plugins(conn, DEMO_TENANT, [p.plugin_id for p in demo_catalog()])
        await usage.forget_tools(conn, forgotten)
    console.print(sync_table(reports))
    console.print(
        f"removed the demo: {sum(r.deleted for r in reports)} tools of {len(reports)} {DEMO_PREFIX}* plugins "
        f"soft-deleted, their categories and page mappings dropped, and what the demo taught of its {len(forgotten)} "
        "tools forgotten (posteriors, quality, quarantine, learnt queries; the events stay in the history)."
    )


def quarantined_since(entries: Iterable[QuarantineEntry], started: datetime) -> list[str]:
    """The demo's tools quarantined since ``started`` (not what an earlier run left), as lines to print."""
    return [
        f"{e.plugin_id}/{e.name} for {e.tenant_id} ({e.reason})"
        for e in entries
        if e.plugin_id.startswith(DEMO_PREFIX) and e.tenant_id == DEMO_TENANT and e.since >= started
    ]


async def _quarantined(client: ToolselClient, started: datetime) -> list[str]:
    """``quarantined_since`` of the learner's quarantine list (nothing when the admin API refuses)."""
    try:
        listed = await client.list_quarantine()
    except ToolselError:
        return []
    return quarantined_since(listed.entries, started)


async def run_demo(client: ToolselClient, settings: Settings) -> None:
    """``settings``: the stack's, whose learner's prior and discount say what the demo's outcomes teach."""
    started = datetime.now(UTC)
    catalog = demo_catalog()
    await _forget_shared_copies(client)
    reports = [await client.sync(p) for p in track(catalog, description="syncing the demo catalog")]
    console.print(sync_table(reports))
    tools = sum(len(p.tools) for p in catalog)
    console.print(
        f"synced {tools} demo tools as {len(catalog)} plugins named {DEMO_PREFIX}*, for the tenant {DEMO_TENANT!r}."
    )
    if not await _catalog_served(client, max(r.catalog_version for r in reports)):
        console.print(f"[yellow]the selector has not loaded that catalog within {CATALOG_WAIT_S:.0f} s[/]")
    for query, page in DEMO_QUERIES:
        reply = await client.select(query=query, page=page, dry_run=True, seed=1, tenant_id=DEMO_TENANT)
        console.print(selection_view(reply, f"{query!r} on page {page or '-'}"))

    query, page = LEARNING_QUERY
    before = await client.select(query=query, page=page, dry_run=True, seed=7, k=10, tenant_id=DEMO_TENANT)
    console.print(selection_view(before, f"before learning: {query!r}", LEARNING))
    first, second = [t for t in before.tools if not t.pinned][:2]
    console.print(
        f"The agent now runs {ROUNDS} times: [red]{first.name}[/] fails when called, [green]{second.name}[/] works."
    )
    wins = failures = 0
    for _ in track(range(ROUNDS), description="selections and outcomes"):
        reply = await client.select(query=query, page=page, tenant_id=DEMO_TENANT)
        calls = [
            ToolCall(plugin_id=t.plugin_id, name=t.name, success=t.key == second.key, latency_ms=120.0)
            for t in reply.tools
            if t.key in {first.key, second.key}
        ]
        wins += sum(c.success for c in calls)
        failures += sum(not c.success for c in calls)
        await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=calls)])
    expected = learnt_alpha(second.breakdown.alpha, wins, settings)
    after, learnt = await _wait_for_learning(client, query, page, second.key, expected)
    console.print(selection_view(after, f"after learning: {query!r}", LEARNING))
    if not learnt:
        console.print(
            f"[yellow]The selector did not show the learnt posterior of {second.name} (alpha {expected:.1f}) within"
            f" {LEARNING_WAIT_S:.0f} s[/]: the table is what it had (`toolsel status` shows the learner's health)."
        )
    rank = {t.key: i + 1 for i, t in enumerate(t for t in after.tools if not t.pinned)}
    console.print(
        f"Among the retrieved tools, {second.name} moved from 2nd to {rank.get(second.key, 'dropped')} and "
        f"{first.name} from 1st to {rank.get(first.key, 'dropped')}."
    )
    console.print(
        f"The demo recorded {ROUNDS} selections and their outcomes: {wins} successful calls of {second.name}, "
        f"{failures} failed calls of {first.name}."
    )
    for line in await _quarantined(client, started):
        console.print(
            f"[yellow]The learner quarantined {line}[/]: that tenant is offered it no more until it is released "
            f"(`toolsel admin quarantine list`, `toolsel admin quarantine release PLUGIN NAME`)."
        )
    console.print("`toolsel demo --reset` removes the demo's plugins; your own plugins were not touched.")
