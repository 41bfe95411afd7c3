"""Where an evaluation runs: the configured servers, or its own embedded stack in a temporary home."""

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from toolsel.stack import Endpoints, Stack, temporary_stack


@asynccontextmanager
async def servers(env: Mapping[str, str]) -> AsyncIterator[tuple[Endpoints, Stack | None]]:
    """(the servers' endpoints, the stack when it is our own). With TOOLSEL_NATS_URL and TOOLSEL_DATABASE_URL set
    those servers are used as they are; otherwise a fresh stack starts with ``env`` set for its services."""
    if os.environ.get("TOOLSEL_NATS_URL") and os.environ.get("TOOLSEL_DATABASE_URL"):
        yield Endpoints(os.environ["TOOLSEL_NATS_URL"], os.environ["TOOLSEL_DATABASE_URL"]), None
        return
    async with temporary_stack(env, "toolsel-eval-") as (endpoints, stack):
        yield endpoints, stack
