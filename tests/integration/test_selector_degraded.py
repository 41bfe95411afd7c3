"""A selector keeps answering when PostgreSQL is gone, and says which state it could not refresh."""

import asyncio
from collections.abc import Iterator

import pytest

from tests.conftest import running_stack
from tests.integration.catalog import TOOLS, eventually, plugin_sync, sync_and_wait, tool, unique
from toolsel.client import ToolselClient
from toolsel.contracts import RegistryChanged, subjects
from toolsel.stack import Stack


@pytest.fixture(scope="module")
def own_stack() -> Iterator[Stack]:
    """Its own stack: stopping PostgreSQL must not disturb the other tests."""
    yield from running_stack()


async def test_selections_survive_postgres_stopping(own_stack: Stack) -> None:
    assert own_stack.endpoints is not None
    assert own_stack.postgres is not None
    async with ToolselClient(own_stack.endpoints.nats_url) as client:
        tenant = unique("tenant")
        await sync_and_wait(client, plugin_sync(unique("mail"), tenant, [tool(n) for n in TOOLS]))
        await asyncio.to_thread(own_stack.postgres.stop)

        await client.nc.publish(
            subjects.REGISTRY_CHANGED, RegistryChanged(plugin_id="x", reason="t").model_dump_json().encode()
        )

        async def degraded() -> bool:
            reply = await client.select(query="email the report to my boss", tenant_id=tenant, k=2)
            return "registry.stale" in reply.degraded

        assert await eventually(degraded)
        reply = await client.select(query="email the report to my boss", tenant_id=tenant, k=2)
        assert reply.tools[0].name == "send_email"
