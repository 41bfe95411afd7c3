"""Calibrated confidence on the real stack: a query nothing in the catalog fits says so, a fitting one does not,
and ``min_score`` filters on confidence; a compound query shows its parts."""

from tests.integration.catalog import TOOLS, eventually, plugin_sync, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import SelectReply


async def test_nonsense_is_no_match_and_min_score_filters_on_confidence(client: ToolselClient) -> None:
    plugin, tenant = unique("sure"), unique("tenant")
    await client.sync(plugin_sync(plugin, tenant, [tool(n, example_queries=[]) for n in TOOLS]))

    async def ask(query: str, min_score: float | None = None) -> SelectReply:
        filters = {"plugins": [plugin], "min_score": min_score}
        return await client.select(query=query, tenant_id=tenant, k=5, dry_run=True, seed=1, filters=filters)

    async def synced() -> bool:
        return len((await ask("weather")).tools) == len(TOOLS)

    assert await eventually(synced, timeout_s=60), "the selector did not pick up the sync"

    fits = await ask("what's the weather forecast in Paris tomorrow")
    assert fits.tools[0].name == "get_weather"
    assert not fits.no_match
    assert all(0.0 <= t.confidence <= 1.0 for t in fits.tools)
    assert fits.tools[0].confidence > max(t.confidence for t in fits.tools[1:])

    nonsense = await ask("qwzx plorfk vrumble snid")
    assert nonsense.no_match, [(t.name, t.confidence) for t in nonsense.tools]
    assert max(t.confidence for t in nonsense.tools) < fits.tools[0].confidence

    between = (fits.tools[0].confidence + max(t.confidence for t in fits.tools[1:])) / 2
    filtered = await ask("what's the weather forecast in Paris tomorrow", min_score=between)
    assert [t.name for t in filtered.tools] == ["get_weather"]


async def test_a_compound_query_shows_its_sub_queries(client: ToolselClient) -> None:
    plugin, tenant = unique("parts"), unique("tenant")
    await client.sync(plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))

    async def ask() -> SelectReply:
        query = "translate the text to German and then send an email to Bob"
        return await client.select(query=query, tenant_id=tenant, k=5, dry_run=True, filters={"plugins": [plugin]})

    async def synced() -> SelectReply | None:
        reply = await ask()
        return reply if len(reply.tools) == len(TOOLS) else None

    reply = await eventually(synced, timeout_s=60)
    assert reply is not None, "the selector did not pick up the sync"
    assert reply.sub_queries == ["translate the text to German", "send an email to Bob"]
    assert {"translate_text", "send_email"} <= {t.name for t in reply.tools[:2]}
