"""The embedding pass against the real store: every pending tool of every page gets the vector computed for its
inputs, and a tool whose inputs changed meanwhile keeps waiting. Runs inside a transaction it rolls back, with a
stand-in model, so the stack's own indexer never sees these tools."""

import json
from collections.abc import AsyncIterator, Sequence

import asyncpg
import numpy as np
import pytest

from tests.integration.catalog import unique
from toolsel.contracts import ToolSpec
from toolsel.embedder import Embedder, Matrix
from toolsel.services.indexer.embedding import embed_pending
from toolsel.services.indexer.hashing import embedding_hash, embedding_text
from toolsel.store import registry

DIM = 384


class HashModel(Embedder):
    """A text's vector is a one-hot of its length (mod the dimension): no model, same vector for the same text."""

    def __init__(self) -> None:
        self.dim = DIM
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(len(texts))
        rows = np.zeros((len(texts), DIM), dtype=np.float32)
        rows[np.arange(len(texts)), [len(t) % DIM for t in texts]] = 1.0
        return rows


@pytest.fixture
async def conn(pool: asyncpg.Pool) -> AsyncIterator[asyncpg.Connection]:
    async with pool.acquire() as connection:
        transaction = connection.transaction()
        await transaction.start()
        try:
            yield connection
        finally:
            await transaction.rollback()


def spec(i: int) -> ToolSpec:
    return ToolSpec(name=f"tool_{i}", description="x" * (i + 1))


async def test_every_page_is_embedded_and_stored_for_its_inputs(conn: asyncpg.Connection) -> None:
    plugin = unique("pages")
    specs = [spec(i) for i in range(5)]
    ids = await registry.insert_tools(conn, plugin, "*", "1.0.0", [(s, "h" * 64, embedding_hash(s)) for s in specs])
    model = HashModel()
    done = await embed_pending(conn, model, page=2)  # nothing else waits: every sync of the stack embeds
    assert (done.tools, model.calls) == (5, [2, 2, 1])
    rows = await conn.fetch(
        "SELECT embedding, embedding_status FROM tools WHERE id = ANY($1::bigint[]) ORDER BY id", list(ids.values())
    )
    assert {r["embedding_status"] for r in rows} == {"current"}
    for row, declared in zip(rows, specs, strict=True):
        assert np.allclose(row["embedding"].to_numpy(), HashModel().embed([embedding_text(declared)])[0])


async def test_a_tool_changed_while_it_was_embedded_keeps_waiting(conn: asyncpg.Connection) -> None:
    first = spec(1)
    ids = await registry.insert_tools(conn, unique("moved"), "*", "1.0.0", [(first, "h" * 64, embedding_hash(first))])
    read = await registry.tools_to_embed(conn, 100)
    assert [r["embed_hash"] for r in read if r["id"] == ids["tool_1"]] == [embedding_hash(first)]
    changed = ToolSpec(name="tool_1", description="something else")
    rewrite = registry.ToolRewrite(ids["tool_1"], changed, "g" * 64, embedding_hash(changed), False, "active")
    await registry.update_tools(conn, "*", "1.0.0", [rewrite])
    vector = np.full(DIM, 1 / np.sqrt(DIM), dtype=np.float32)
    await registry.store_vectors(conn, [(ids["tool_1"], vector, embedding_hash(first))])  # for the old inputs
    row = await conn.fetchrow("SELECT embedding, embedding_status FROM tools WHERE id = $1", ids["tool_1"])
    assert (row["embedding"], row["embedding_status"]) == (None, "stale")


async def test_a_tool_stored_before_a_rule_that_now_refuses_it_is_still_embedded(conn: asyncpg.Connection) -> None:
    """A release that refuses at sync what an earlier one accepted (here an MCP server's URL with dot segments)
    left such a stored tool failing every embedding pass, and the tools pending beside it waiting for good."""
    plugin = unique("older")
    allowed = ToolSpec(
        name="old_mcp",
        description="Reads a file.",
        execution_type="mcp",
        execution_config={"transport": "http", "url": "https://tools.example/mcp", "tool": "read"},
    )
    ids = await registry.insert_tools(
        conn, plugin, "*", "1.0.0", [(allowed, "h" * 64, embedding_hash(allowed)), (spec(3), "h" * 64, "e" * 64)]
    )
    refused_now = {
        **allowed.model_dump(mode="json"),
        "execution_config": {**allowed.execution_config, "url": "https://tools.example/mcp/../admin"},
    }
    await conn.execute("UPDATE tools SET spec = $2::jsonb WHERE id = $1", ids["old_mcp"], json.dumps(refused_now))
    done = await embed_pending(conn, HashModel())
    assert done.tools >= 2
    statuses = await conn.fetch("SELECT embedding_status FROM tools WHERE id = ANY($1::bigint[])", list(ids.values()))
    assert {r["embedding_status"] for r in statuses} == {"current"}
