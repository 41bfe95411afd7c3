"""Learning from use on the real stack: a tenant's successful calls teach its retrieval (a paraphrase finds the
tool that worked), and nothing moves for another tenant or, in the rerank, on another page."""

from uuid import uuid4

from tests.integration.catalog import TOOLS, eventually, plugin_sync, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, SelectReply, ToolCall

TAUGHT = [
    "let the family know about dinner on Sunday",
    "tell my parents about the dinner plans",
    "notify the family of Sunday's dinner",
    "remind everyone about the family dinner",
]
PARAPHRASE = "inform my family about our dinner this weekend"
TARGET = "send_email"
"""What the tenant's agent really used for these requests (retrieval alone prefers the calendar)."""


def ranking(reply: SelectReply) -> list[tuple[str, float, float, float, float]]:
    return [(t.name, t.score, t.breakdown.similarity, t.breakdown.alpha, t.breakdown.beta) for t in reply.tools]


def position(reply: SelectReply) -> int:
    return [t.name for t in reply.tools].index(TARGET)


async def test_successes_teach_only_their_tenant_and_lift_only_in_their_context(client: ToolselClient) -> None:
    plugin, taught, other = unique("family"), unique("tenant"), unique("tenant")
    await client.sync(plugin_sync(plugin, "*", [tool(n) for n in TOOLS]))  # shared: both tenants see them
    try:

        async def ask(tenant: str, query: str = PARAPHRASE, page: str = "/inbox") -> SelectReply:
            return await client.select(
                query=query, tenant_id=tenant, page=page, k=5, dry_run=True, seed=7, filters={"plugins": [plugin]}
            )

        async def synced() -> bool:
            return len((await ask(taught)).tools) == len(TOOLS)

        assert await eventually(synced), "the selector did not pick up the sync"

        before, theirs_before = await ask(taught), await ask(other)
        assert position(before) > 0, "the paraphrase already finds the tool: nothing to learn"

        for query in TAUGHT:  # one selection each, every tool offered, one success
            reply = await client.select(
                query=query, tenant_id=taught, page="/inbox", k=5, session_id=uuid4().hex, filters={"plugins": [plugin]}
            )
            assert TARGET in {t.name for t in reply.tools}
            call = ToolCall(plugin_id=plugin, name=TARGET, success=True, latency_ms=50)
            await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call])])

        def similarity(reply: SelectReply) -> float:
            return reply.tools[position(reply)].breakdown.similarity

        async def moved() -> SelectReply | None:
            """Up, and by the usage memory (its vectors reach the selector after the posteriors' broadcast)."""
            now = await ask(taught)
            return now if position(now) < position(before) and similarity(now) > similarity(before) else None

        after = await eventually(moved, timeout_s=30)
        assert after is not None, "the tenant's successes did not move the tool up for a paraphrase by its usage"

        assert ranking(await ask(other)) == ranking(theirs_before), "another tenant's ranking moved"

        # the bandit context is tier, page and intent: a taught query's own context holds the evidence
        here_reply = await ask(taught, query=TAUGHT[0])
        here = here_reply.tools[position(here_reply)].breakdown
        elsewhere_reply = await ask(taught, query=TAUGHT[0], page="/calendar")
        elsewhere = elsewhere_reply.tools[position(elsewhere_reply)].breakdown
        assert here.alpha > 1.0
        assert here.recency > 0.0
        assert (elsewhere.alpha, elsewhere.beta, elsewhere.recency) == (1.0, 1.0, 0.0)
    finally:  # shared tools are offered to every tenant: leave none behind for the tests that follow
        await client.sync(plugin_sync(plugin, "*", []))
