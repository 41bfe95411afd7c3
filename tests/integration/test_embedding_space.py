"""The store knows which model its vectors come from: a service set for another refuses to start, and
``toolsel indexer --switch-model`` is the one way to change it (it embeds every tool and what was learnt from
queries again, and keeps the rest)."""

import asyncio
import json
import os
import subprocess
from pathlib import Path
from uuid import uuid4

import asyncpg
import numpy as np
import pytest
from pgvector import Vector
from pgvector.asyncpg import register_vector

from toolsel import embedding_space
from toolsel.cli.tools import ServicesStarted, _switch
from toolsel.contracts import ToolSpec
from toolsel.embedded import local_nats_url
from toolsel.embedder import EARLIER_TOOLS_MODELS, TOOLS_MODEL_NAME, load_embedder
from toolsel.runtime import load_model, open_store
from toolsel.services.indexer.hashing import embedding_text
from toolsel.settings import Settings, get_settings
from toolsel.stack import TOOLSEL_COMMAND, Endpoints, Stack
from toolsel.store import create_pool, migrate, registry, space

PACKAGED = get_settings()
OTHER = PACKAGED.model_copy(update={"embedding_model": "BAAI/bge-base-en-v1.5", "embedding_dim": 768})
STOCK = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_SPACE = 13
"""The migration that records the model."""
SPEC = json.dumps({"name": "get_weather", "description": "Current weather and forecast for a city."})


async def learnt_store(url: str) -> tuple[asyncpg.Pool, int]:
    """A store of the packaged model with one embedded tool, a review of it, what it learnt from use and its
    posterior."""
    pool = await create_pool(url)
    await embedding_space.check(pool, PACKAGED)  # what the first service to start records
    vector = Vector(np.full(384, 0.05, dtype=np.float32))
    async with pool.acquire() as conn:
        tool = await conn.fetchval(
            "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash, embed_hash, embedding,"
            " embedding_status) VALUES ('weather', 'get_weather', '*', $1, repeat('0', 64), repeat('1', 64), $2,"
            " 'current') RETURNING id",
            SPEC,
            vector,
        )
        await conn.execute(
            "INSERT INTO review_log (event_id, tool_id, query_embedding, verdict, fitness) VALUES ($1, $2, $3,"
            " 'perfect', 1)",
            uuid4(),
            tool,
            vector,
        )
        await conn.execute(
            "INSERT INTO review_index (tool_id, centroid, fitness, reviews) VALUES ($1, $2, 1, 1)", tool, vector
        )
        await conn.execute(
            "INSERT INTO tool_usage_examples (tool_id, scope, event_id, polarity, query_vector) VALUES ($1, '*', $2,"
            " 1, $3)",
            tool,
            uuid4(),
            vector,
        )
        await conn.execute(
            "INSERT INTO tool_usage_vectors (tool_id, scope, centroid, positives, negatives, version) VALUES ($1,"
            " '*', $2, 1, 0, 1)",
            tool,
            vector,
        )
        await conn.execute("INSERT INTO usage_query_totals (scope, total, queries) VALUES ('*', $1, 1)", vector)
        await conn.execute(
            "INSERT INTO tool_bandit_stats (tool_id, context_key, alpha, beta) VALUES ($1, 'ctx', 3, 1)", tool
        )
    return pool, tool


async def counts(pool: asyncpg.Pool) -> dict[str, int]:
    tables = ("review_log", "review_index", "tool_usage_examples", "tool_usage_vectors", "usage_query_totals")
    found = {t: await pool.fetchval(f"SELECT count(*) FROM {t}") for t in tables}
    return found | {"posteriors": await pool.fetchval("SELECT count(*) FROM tool_bandit_stats")}


async def test_a_service_set_for_another_model_than_the_stores_refuses_to_start(
    empty_database: str, stack: Stack
) -> None:
    pool = await create_pool(empty_database)
    try:
        await embedding_space.check(pool, PACKAGED)  # a new store takes the first service's model
        await embedding_space.check(pool, PACKAGED)
        with pytest.raises(embedding_space.ModelMismatch) as refused:
            await embedding_space.check(pool, OTHER)
        assert f"{PACKAGED.embedding_model} (384-d)" in str(refused.value)
        assert "BAAI/bge-base-en-v1.5 (768-d)" in str(refused.value)
        assert "toolsel indexer --switch-model" in str(refused.value)
        same_name = PACKAGED.model_copy(update={"embedding_dim": 768})
        with pytest.raises(embedding_space.ModelMismatch):
            await embedding_space.check(pool, same_name)
        assert tuple(await pool.fetchrow("SELECT model, dim FROM embedding_space")) == (PACKAGED.embedding_model, 384)
        indexer = local_nats_url(stack.settings.home, "indexer")
        with pytest.raises(embedding_space.ModelMismatch):  # what every service opens first
            await open_store(OTHER.model_copy(update={"database_url": empty_database, "nats_url": indexer}))
    finally:
        await pool.close()


async def test_a_switch_drops_the_tools_vectors_and_keeps_the_rest_for_the_learner_to_write_again(
    empty_database: str,
) -> None:
    pool, tool = await learnt_store(empty_database)
    try:
        await embedding_space.check(pool, PACKAGED)
        before = await counts(pool)
        switched = await embedding_space.switch(pool, OTHER, lambda conn: conn.fetchval("SELECT count(*) FROM tools"))
        assert (switched.previous, switched.tools, switched.learnt) == ((PACKAGED.embedding_model, 384), 1, 1)
        row = await pool.fetchrow("SELECT embedding, embedding_status FROM tools WHERE id = $1", tool)
        assert (row["embedding"], row["embedding_status"]) == (None, "pending")
        assert await counts(pool) == before  # what was learnt is the caller's to write again
        await embedding_space.check(pool, OTHER)
        with pytest.raises(embedding_space.ModelMismatch):
            await embedding_space.check(pool, PACKAGED)
        # the new model's vectors have their own size
        waiting = await registry.tools_to_embed(pool, 10)
        wide = np.full(768, 0.03, dtype=np.float32)
        await registry.store_vectors(pool, [(tool, wide, waiting[0]["embed_hash"])])
        stored = await pool.fetchval("SELECT embedding FROM tools WHERE id = $1", tool)
        assert stored.to_numpy().shape == (768,)
    finally:
        await pool.close()


async def test_a_model_whose_size_the_settings_get_wrong_is_refused() -> None:
    with pytest.raises(ValueError, match="makes 384-d vectors and TOOLSEL_EMBEDDING_DIM says 768"):
        await load_model(PACKAGED.model_copy(update={"embedding_dim": 768}), cache=False)


def switch(**env: str) -> subprocess.CompletedProcess[str]:
    """``toolsel indexer --switch-model`` with these settings (and no NATS unless given)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("TOOLSEL_NATS_URL", "TOOLSEL_DATABASE_URL")}
    command = [*TOOLSEL_COMMAND, "indexer", "--switch-model"]
    return subprocess.run(command, env=environment | env, capture_output=True, text=True, timeout=180)


async def test_switching_the_model_embeds_every_tool_again(empty_database: str) -> None:
    pool, tool = await learnt_store(empty_database)
    try:
        done = await asyncio.to_thread(switch, TOOLSEL_DATABASE_URL=empty_database)
        assert done.returncode == 0, done.stderr
        said = " ".join(done.stdout.split())
        assert "1 tools embedded again (1 tool vectors dropped)" in said
        assert "2 whose selection is no longer stored were dropped" in said  # they were stored without one
        row = await pool.fetchrow("SELECT embedding, embedding_status FROM tools WHERE id = $1", tool)
        assert row["embedding_status"] == "current"
        embedder = await load_model(PACKAGED, cache=False)
        expected = embedder.embed([embedding_text(ToolSpec.model_validate_json(SPEC))])[0]
        assert float(np.dot(row["embedding"].to_numpy(), expected)) > 0.99
        assert await counts(pool) == {
            "review_log": 0,
            "review_index": 0,
            "tool_usage_examples": 0,
            "tool_usage_vectors": 0,
            "usage_query_totals": 0,
            "posteriors": 1,
        }
    finally:
        await pool.close()


async def test_a_switch_refuses_while_services_run_or_with_a_model_of_the_wrong_size(
    empty_database: str, stack: Stack, endpoints: Endpoints
) -> None:
    pool, tool = await learnt_store(empty_database)
    try:
        beside = await asyncio.to_thread(
            switch, TOOLSEL_DATABASE_URL=empty_database, TOOLSEL_NATS_URL=endpoints.nats_url
        )
        assert beside.returncode == 2
        assert "still running" in beside.stderr
        running = await asyncio.to_thread(switch, TOOLSEL_HOME=str(stack.settings.home))
        assert running.returncode == 2
        assert "already running" in running.stderr
        missized = await asyncio.to_thread(switch, TOOLSEL_DATABASE_URL=empty_database, TOOLSEL_EMBEDDING_DIM="768")
        assert missized.returncode == 1
        assert "makes 384-d vectors and TOOLSEL_EMBEDDING_DIM says 768" in " ".join(missized.stderr.split())
        assert (await counts(pool))["tool_usage_vectors"] == 1  # nothing was dropped
        assert await pool.fetchval("SELECT embedding_status FROM tools WHERE id = $1", tool) == "current"
    finally:
        await pool.close()


async def test_a_service_started_while_the_switch_embedded_the_learnt_queries_stops_it(empty_database: str) -> None:
    """A service started after the switch's first check passes its own check against the old model, and would go
    on writing that model's vectors into the switched store."""
    pool, tool = await learnt_store(empty_database)
    try:
        before = await counts(pool)

        async def a_learner_answers() -> list[str]:
            return ["learner"]

        with pytest.raises(ServicesStarted):
            await _switch(empty_database, PACKAGED.model_copy(update={"embedding_model": STOCK}), a_learner_answers)
        assert await counts(pool) == before
        assert await pool.fetchval("SELECT embedding_status FROM tools WHERE id = $1", tool) == "current"
        async with pool.acquire() as conn:
            assert await space.recorded(conn) == (PACKAGED.embedding_model, PACKAGED.embedding_dim)
    finally:
        await pool.close()


async def test_a_stopped_embedded_stack_is_switched_on_its_own_database(tmp_path: Path) -> None:
    done = await asyncio.to_thread(switch, TOOLSEL_HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "no model was recorded: 0 tools embedded again" in " ".join(done.stdout.split())
    assert (tmp_path / "pg").is_dir()


async def test_a_store_from_before_the_record_holds_the_stock_models_vectors(empty_database: str) -> None:
    """Before the store recorded its model, every store's vectors were the stock model's (then the default): the
    default service refuses them and says what to do, a service set for the stock model takes them."""
    await migrate(empty_database, before=EMBEDDING_SPACE)
    conn = await asyncpg.connect(empty_database)
    try:
        await register_vector(conn)
        tool = await conn.fetchval(
            "INSERT INTO tools (plugin_id, name, tenant_id, spec, content_hash, embedding) VALUES ('weather',"
            " 'get_weather', '*', $1, repeat('0', 64), $2) RETURNING id",
            SPEC,
            Vector(np.full(384, 0.05, dtype=np.float32)),
        )
    finally:
        await conn.close()
    pool = await create_pool(empty_database)  # migrates the rest
    try:
        stored = await pool.fetchval("SELECT embedding FROM tools WHERE id = $1", tool)
        assert np.allclose(stored.to_numpy(), 0.05)
        assert await pool.fetchval("SELECT count(*) FROM embedding_space") == 0
        with pytest.raises(embedding_space.ModelMismatch) as refused:
            await embedding_space.check(pool, PACKAGED)
        assert tuple(await pool.fetchrow("SELECT model, dim FROM embedding_space")) == (STOCK, 384)
        said = " ".join(str(refused.value).split())
        assert f"default is now {PACKAGED.embedding_model}" in said
        assert "toolsel indexer --switch-model" in said
        assert f"TOOLSEL_EMBEDDING_MODEL={STOCK}" in said
        await embedding_space.check(pool, get_settings().model_copy(update={"embedding_model": STOCK}))
    finally:
        await pool.close()


async def test_upgrading_a_store_of_the_stock_model_says_how_to_move_or_stay(empty_database: str) -> None:
    pool = await create_pool(empty_database)
    try:
        stock = Settings(embedding_model=STOCK)
        await embedding_space.check(pool, stock)  # an earlier version's services recorded the stock model
        with pytest.raises(embedding_space.ModelMismatch) as refused:
            await embedding_space.check(pool, Settings())  # this version's defaults
        said = " ".join(str(refused.value).split())
        assert f"this store's vectors come from {STOCK}, the default model of earlier versions" in said
        assert "stop every service and run `toolsel indexer --switch-model`" in said
        assert f"to keep the stock model, set TOOLSEL_EMBEDDING_MODEL={STOCK}" in said
    finally:
        await pool.close()


async def test_upgrading_a_store_of_an_earlier_revision_of_the_own_model_says_to_switch(empty_database: str) -> None:
    earlier = EARLIER_TOOLS_MODELS[0]
    pool = await create_pool(empty_database)
    try:
        async with pool.acquire() as conn:
            await space.claim(conn, earlier, 384)  # an earlier version's services recorded its own model
        with pytest.raises(embedding_space.ModelMismatch) as refused:
            await embedding_space.check(pool, Settings())  # this version's defaults
        said = " ".join(str(refused.value).split())
        assert f"this store's vectors come from {earlier}, an earlier revision of toolsel's own model" in said
        assert f"the default is now {TOOLS_MODEL_NAME}" in said
        assert "stop every service and run `toolsel indexer --switch-model`" in said
        assert await space.recorded(pool) == (earlier, 384)  # the refusal changed nothing
    finally:
        await pool.close()


def test_an_earlier_revision_of_the_own_model_named_explicitly_is_refused_plainly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="earlier revision of toolsel's own model, no longer shipped"):
        load_embedder(
            None,
            tmp_path,
            threads=1,
            workers=1,
            batch_size=8,
            batch_tokens=512,
            cache_size=0,
            model_name=EARLIER_TOOLS_MODELS[0],
            dim=384,
        )
