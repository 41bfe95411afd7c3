"""The residual fit on the real store: a scope's fitted residuals are written in that scope only (another
tenant's stay as they were), under a new version the selectors' usage read returns, and a fit that does not win
writes nothing."""

import uuid

import asyncpg
import numpy as np
import numpy.typing as npt

from tests.integration.catalog import TOOLS, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.services.learner.residual_fit import Fit, refit_scope
from toolsel.services.learner.usage import POSITIVE, Example, UsageRules, remember
from toolsel.settings import get_settings
from toolsel.store import catalog, usage

Matrix = npt.NDArray[np.float32]
ANY_FIT_WINS = -1.0
"""A margin every fit meets: whether a fit wins is the unit tests' (tests/unit/learner/test_residual_fit.py)."""


async def synced(client: ToolselClient, pool: asyncpg.Pool, tenant: str) -> tuple[list[int], Matrix]:
    """A private plugin of the five test tools for ``tenant``: their ids and declared vectors, by name."""
    plugin = unique("fit")
    await sync_and_wait(client, plugin_sync(plugin, tenant, [tool(n) for n in TOOLS]))
    rows = await pool.fetch("SELECT id, embedding FROM tools WHERE plugin_id = $1 ORDER BY name", plugin)
    return [r["id"] for r in rows], np.vstack([r["embedding"].to_numpy() for r in rows]).astype(np.float32)


async def learnt(pool: asyncpg.Pool, tenant: str, ids: list[int], declared: Matrix, per_tool: int) -> None:
    """``per_tool`` examples of each tool in the tenant's scope, each query nearer the next tool's vector than
    its own (what the declared vectors rank wrongly), learnt as the learner learns them."""
    rng = np.random.default_rng(abs(hash(tenant)) % 2**32)
    examples, vectors = [], {}
    for i in range(per_tool * len(ids)):
        t = i % len(ids)
        mixed = 0.6 * declared[t] + declared[(t + 1) % len(ids)] + 0.05 * rng.normal(size=declared.shape[1])
        text = f"{tenant} query {i}"
        vectors[text] = (mixed / np.linalg.norm(mixed)).astype(np.float32)
        examples.append(Example(ids[t], tenant, uuid.uuid4(), POSITIVE, text, uuid.uuid4()))
    async with pool.acquire() as conn, conn.transaction():
        await remember(conn, examples, vectors, UsageRules.from_settings(get_settings()))


async def residuals(pool: asyncpg.Pool, scope: str) -> dict[int, tuple[int, Matrix | None]]:
    rows = await pool.fetch("SELECT tool_id, version, residual FROM tool_usage_vectors WHERE scope = $1", scope)
    return {
        r["tool_id"]: (r["version"], None if r["residual"] is None else r["residual"].to_numpy().astype(np.float32))
        for r in rows
    }


def unchanged(before: dict[int, tuple[int, Matrix | None]], after: dict[int, tuple[int, Matrix | None]]) -> bool:
    """The same tools, each at the same version with the same residual (or none)."""

    def same(x: Matrix | None, y: Matrix | None) -> bool:
        return (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))

    return before.keys() == after.keys() and all(
        after[t][0] == version and same(after[t][1], residual) for t, (version, residual) in before.items()
    )


async def test_a_fit_is_written_in_its_own_scope_and_read_by_the_selectors(
    client: ToolselClient, pool: asyncpg.Pool
) -> None:
    settings = get_settings().model_copy(update={"tune_margin": ANY_FIT_WINS})
    a, b = unique("fit-a"), unique("fit-b")
    ids_a, declared_a = await synced(client, pool, a)
    ids_b, declared_b = await synced(client, pool, b)
    await learnt(pool, a, ids_a, declared_a, 12)
    await learnt(pool, b, ids_b, declared_b, 12)
    before_b = await residuals(pool, b)
    watermark = max(v for v, _ in [*(await residuals(pool, a)).values(), *before_b.values()])
    async with pool.acquire() as conn:
        done = await refit_scope(conn, a, Fit.from_settings(settings))
    assert done is not None
    version = done.version
    assert version is not None
    assert done.scope == a
    assert done.written == len(ids_a)
    assert done.judged.examples == 12 * len(ids_a)
    after_a = await residuals(pool, a)
    assert sorted(after_a) == sorted(ids_a)
    assert {v for v, _ in after_a.values()} == {version}
    for _, residual in after_a.values():
        assert residual is not None
        assert 0 < float(np.linalg.norm(residual)) <= settings.usage_residual_max_norm + 1e-5
    assert unchanged(before_b, await residuals(pool, b)), "another tenant's residuals moved"
    seen = [r for r in await catalog.usage_vectors_since(pool, watermark) if r["scope"] == a]
    assert len(seen) == len(ids_a)
    assert all(r["version"] == version and r["residual"] is not None for r in seen)
    assert not [r for r in await catalog.usage_vectors_since(pool, watermark) if r["scope"] == b]


async def test_a_fit_that_does_not_win_writes_nothing(client: ToolselClient, pool: asyncpg.Pool) -> None:
    settings = get_settings().model_copy(update={"tune_margin": 1.0})  # no NDCG@10 gains a whole point
    tenant = unique("fit-c")
    ids, declared = await synced(client, pool, tenant)
    await learnt(pool, tenant, ids, declared, 12)
    before = await residuals(pool, tenant)
    async with pool.acquire() as conn:
        done = await refit_scope(conn, tenant, Fit.from_settings(settings))
        assert tenant in await usage.scopes_learnt(conn)
    assert done is not None
    assert not done.judged.wins
    assert done.written == 0
    assert done.version is None
    assert unchanged(before, await residuals(pool, tenant))
