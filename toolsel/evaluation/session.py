"""Where an evaluation runs: the configured servers, or its own embedded stack in a temporary home."""

import os
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from toolsel.settings import Settings
from toolsel.stack import Endpoints, Stack

UNSET = ("TOOLSEL_PLUGIN_SECRETS", "TOOLSEL_REQUIRE_PLUGIN_CREDENTIALS", "TOOLSEL_SIGNED_PLUGINS")


@asynccontextmanager
async def servers(env: Mapping[str, str]) -> AsyncIterator[tuple[Endpoints, Stack | None]]:
    """(the servers' endpoints, the stack when it is our own). With TOOLSEL_NATS_URL and TOOLSEL_DATABASE_URL set
    those servers are used as they are; otherwise a fresh stack starts with ``env`` set for its services."""
    if os.environ.get("TOOLSEL_NATS_URL") and os.environ.get("TOOLSEL_DATABASE_URL"):
        yield Endpoints(os.environ["TOOLSEL_NATS_URL"], os.environ["TOOLSEL_DATABASE_URL"]), None
        return
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="toolsel-eval-") as home:
        os.environ.update(env)
        for name in UNSET:
            os.environ.pop(name, None)
        stack = Stack(Settings(home=Path(home)))
        try:
            yield await stack.start(timeout_s=300), stack
        finally:
            stack.stop()
            os.environ.clear()
            os.environ.update(saved)
