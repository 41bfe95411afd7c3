"""The analytics over a larger or odder history than the stack's own selections make: pages that vary, selectors
whose clocks run ahead, selections stored late, empty tables, exports while events arrive, one tenant's history.
Selections are stored as the learner stores them (``toolsel.store.events``), under a tenant of the test's own."""

import json
import re
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import polars as pl
import pytest

from tests.integration.catalog import run_cli, unique
from tests.integration.history import selection, store
from toolsel.analytics.export import export
from toolsel.analytics.load import from_store
from toolsel.client import ToolselClient
from toolsel.contracts.admin import AnalyticsQuery
from toolsel.messaging import room
from toolsel.stack import Endpoints
from toolsel.store import create_pool

pytestmark = pytest.mark.integration
DOCS = Path(__file__).parents[2] / "docs" / "analysts.md"


def _exported(out: Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(out / table, hive_partitioning=True)


async def test_the_heatmap_of_pages_that_vary_fits_one_message_and_the_cli_bounds_it(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """1,500 selections on distinct ~250-character pages: 4,500 cells, more than NATS's 1 MB. The reply failed
    for good ("too large ... ask for less") with nothing to ask less of."""
    tenant = unique("heat")
    pages = [f"/inbox/{i:04d}?" + "q" * 240 for i in range(1500)]
    await store(pool, [selection(tenant, page, tools=3) for page in pages] + [selection(tenant, pages[0], tools=3)])
    heat = await client.heatmap(AnalyticsQuery(tenant_id=tenant))
    assert len(heat.model_dump_json().encode()) <= room(None)
    assert 0 < len(heat.cells) < 4500
    assert heat.left_out == 4500 - len(heat.cells)
    assert [(c.page, c.count) for c in heat.cells[:3]] == [(pages[0], 2)] * 3  # the heaviest first

    bounded = run_cli(endpoints, "analytics", "heatmap", "--tenant", tenant, "--tools", "2", "--pages", "3", "--json")
    assert bounded.returncode == 0, bounded.stderr
    reply = json.loads(bounded.stdout)
    assert {c["tool"] for c in reply["cells"]} == {"hist/tool_0", "hist/tool_1"}
    assert len({c["page"] for c in reply["cells"]}) == 3
    assert reply["other_pages"] == {"hist/tool_0": 1497, "hist/tool_1": 1497}


async def test_the_learners_counts_are_those_of_the_exported_history(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    """The learner counts metrics and heatmap cells in SQL; an export is measured with polars: the same answer."""
    tenant = unique("same")
    await store(pool, [selection(tenant, f"/p{i % 4}", tools=i % 3) for i in range(30)], called=12)
    out = Path(tempfile.mkdtemp(prefix="toolsel-export-"))
    assert run_cli(endpoints, "export", "--out", str(out), "--tenant", tenant).returncode == 0
    query = AnalyticsQuery(tenant_id=tenant)
    for command, asked in (("metrics", client.metrics(query)), ("heatmap", client.heatmap(query))):
        local = run_cli(endpoints, "analytics", command, "--export", str(out), "--tenant", tenant, "--json")
        assert local.returncode == 0, local.stderr
        assert (await asked).model_dump(mode="json") == json.loads(local.stdout)
    numbers = await client.metrics(query)
    assert (numbers.selections, numbers.outcomes) == (30, {"no_outcome": 18, "success": 8, "failure": 4})


async def test_an_export_follows_when_selections_were_stored_not_the_selectors_clock(
    endpoints: Endpoints, pool: asyncpg.Pool
) -> None:
    """A selector a day ahead moved the mark a day ahead: every selection stored in that day, and one stored
    more than the export's overlap late, was missing from every later export."""
    tenant = unique("skew")
    now = datetime.now(UTC)
    out = Path(tempfile.mkdtemp(prefix="toolsel-export-"))
    stored: list[UUID] = []
    for at in (now + timedelta(days=1), now, now - timedelta(hours=3)):  # ahead, on time, late
        made = selection(tenant, at=at)
        await store(pool, [made])
        stored.append(made.selection_id)
        exported = run_cli(endpoints, "export", "--out", str(out), "--tenant", tenant)
        assert exported.returncode == 0, exported.stderr
    assert sorted(_exported(out, "selections")["selection_id"]) == sorted(str(s) for s in stored)
    assert _exported(out, "selections")["stored_at"].null_count() == 0


async def test_an_empty_history_exports_every_table_and_the_documented_script_reads_it(
    empty_database: str, tmp_path: Path
) -> None:
    """A table with no rows got no directory, and the reader script of docs/analysts.md raised FileNotFoundError."""
    store = await create_pool(empty_database)
    try:
        assert await export(store, tmp_path) == dict.fromkeys(("selections", "outcomes", "reviews", "feedback"), 0)
    finally:
        await store.close()
    for table in ("selections", "outcomes", "reviews", "feedback"):
        assert _exported(tmp_path, table).height == 0
    (script,) = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    exec(script.replace('"export/', f'"{tmp_path}/'), {})


class Interloping:
    """A pool that stores a selection and its outcome after the first statement an export makes, as the learner
    does while an export runs; a snapshot does not see them, separate statements see the outcome alone."""

    def __init__(self, pool: asyncpg.Pool, tenant: str):
        self.pool, self.tenant, self.stored = pool, tenant, False

    async def interlope(self) -> None:
        if not self.stored:
            self.stored = True
            await store(self.pool, [selection(self.tenant)], called=1)

    def wrapped(self, target: Any) -> Any:
        outer = self

        class Fetching:
            def __getattr__(self, name: str) -> Any:
                return getattr(target, name)

            async def fetch(self, *args: Any) -> Any:
                rows = await target.fetch(*args)
                await outer.interlope()
                return rows

        return Fetching()

    async def fetch(self, *args: Any) -> Any:
        return await self.wrapped(self.pool).fetch(*args)

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[Any]:
        async with self.pool.acquire() as conn:
            yield self.wrapped(conn)


async def test_an_export_is_one_moment_of_the_history(pool: asyncpg.Pool, tmp_path: Path) -> None:
    """The four tables were read in separate statements: outcomes stored between them were exported without the
    selections they are of."""
    tenant = unique("snap")
    await store(pool, [selection(tenant) for _ in range(3)], called=3)
    written = await export(Interloping(pool, tenant), tmp_path, tenant=tenant)  # type: ignore[arg-type]
    assert written["selections"] == written["outcomes"] == 3
    selections, outcomes = _exported(tmp_path, "selections"), _exported(tmp_path, "outcomes")
    assert set(outcomes["selection_id"]) <= set(selections["selection_id"])
    await export(pool, tmp_path, tenant=tenant)  # the next export has them
    assert (_exported(tmp_path, "selections").height, _exported(tmp_path, "outcomes").height) == (4, 4)


async def test_one_tenants_history_exported_measured_and_served_on_its_own(
    endpoints: Endpoints, client: ToolselClient, pool: asyncpg.Pool
) -> None:
    mine, theirs = unique("mine"), unique("theirs")
    await store(pool, [selection(mine) for _ in range(3)], called=2)
    await store(pool, [selection(theirs) for _ in range(5)], called=5)
    out = Path(tempfile.mkdtemp(prefix="toolsel-export-"))
    exported = run_cli(endpoints, "export", "--out", str(out), "--tenant", mine)
    assert exported.returncode == 0, exported.stderr
    for table, rows in (("selections", 3), ("outcomes", 2)):
        assert _exported(out, table)["tenant_id"].to_list() == [mine] * rows
    assert _exported(out, "reviews").schema["tenant_id"] == pl.String

    other = run_cli(endpoints, "export", "--out", str(out), "--tenant", theirs)
    assert other.returncode == 2
    assert f"holds tenant {mine}'s rows" in other.stderr
    assert run_cli(endpoints, "export", "--out", str(out)).returncode == 2
    assert run_cli(endpoints, "export", "--out", str(out), "--tenant", "not a tenant").returncode == 2

    measured = run_cli(endpoints, "analytics", "metrics", "--tenant", theirs, "--json")
    assert measured.returncode == 0, measured.stderr
    assert json.loads(measured.stdout)["selections"] == 5
    accuracy = await client.accuracy(AnalyticsQuery(tenant_id=mine))
    assert sum(p.outcomes for p in accuracy.points) == 2
    reviews = await from_store(pool, "reviews", tenant=mine)
    assert reviews.is_empty()
