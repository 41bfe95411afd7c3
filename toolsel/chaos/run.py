"""``toolsel chaos``: a stack of its own in a temporary home, supervised as ``toolsel up`` supervises it, and the
scenarios run on it one after another; each scenario's figures are handed on as soon as it ends."""

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from toolsel.chaos.forged import forged
from toolsel.chaos.fuzz import fuzz
from toolsel.chaos.kill import kill
from toolsel.chaos.mcp_lines import mcp_lines
from toolsel.chaos.oversize import oversize
from toolsel.chaos.restart import nats_restart
from toolsel.chaos.scenarios import SCENARIOS, Scenario
from toolsel.chaos.stage import Stage
from toolsel.chaos.tenancy import eavesdrop, id_reuse, msg_id_claim, spoof
from toolsel.chaos.tenants import tenants
from toolsel.client import ToolselClient
from toolsel.stack import Stack, temporary_stack
from toolsel.store import create_pool

STACK_ENV = {
    "TOOLSEL_POSTERIOR_DISCOUNT": "1",
    "TOOLSEL_RESTART_BACKOFF_S": "0.2",
    "TOOLSEL_RESTART_BACKOFF_MAX_S": "2",
    "TOOLSEL_ORPHAN_TIMEOUT_S": "8",
}
"""Nothing forgotten, so each applied outcome adds exactly 1 to its posterior (the kill scenario counts on it); a
killed service back within seconds; an outcome whose selection never comes dead-lettered after 8 s."""
SUPERVISE_EVERY_S = 0.2
REUSED_SELECTIONS = 3
"""Id reuse: the victim's selections the hostile events are spread over (the attack the scenario replays aimed
25 failures at three)."""


@dataclass(frozen=True)
class Options:
    fuzz: int = 10_000
    """Hostile inputs per request subject and per event subject."""
    kills: int = 10
    outcomes: int = 5_000
    server_kills: int = 5
    """Kill-nats, kill-postgres: times each server is SIGKILLed while ``outcomes`` outcomes stream."""
    selections: int = 2_000
    """Selections answered across the NATS restart."""
    rounds: int = 10
    """Tenants: rounds of events per question of the streaming tenant."""
    forgeries: int = 25
    """Forged: each broadcast published this many times."""
    oversize: int = 100
    """Oversize: select requests whose whole reply would be over the NATS message size."""
    mcp_rounds: int = 10
    """MCP stdio: times each kind of malformed line is sent."""
    attacks: int = 100
    """Eavesdrop, spoof, id reuse, msg-id claim: the victim's selections listened to or claimed, the spoofing
    attempts of each kind, the hostile outcomes and reviews on the victim's selections."""
    seed: int = 0
    scenarios: tuple[Scenario, ...] = SCENARIOS


@asynccontextmanager
async def own_stack(env: Mapping[str, str]) -> AsyncIterator[Stack]:
    """A fresh stack in a temporary home (``temporary_stack``), its services started with ``env`` (and no plugin
    credentials required), supervised until it stops."""
    async with temporary_stack(env, "toolsel-chaos-") as (_, stack):
        supervising = asyncio.create_task(_supervise(stack))
        try:
            yield stack
        finally:
            supervising.cancel()
            with suppress(asyncio.CancelledError):
                await supervising


async def _supervise(stack: Stack) -> None:
    """What ``toolsel up`` does while it runs: restart a service that exited (in this thread, see ``supervise``)."""
    while True:
        stack.supervise()
        await asyncio.sleep(SUPERVISE_EVERY_S)


async def _scenario(stage: Stage, name: Scenario, options: Options) -> dict[str, Any]:
    match name:
        case "forged":
            return await forged(stage, options.forgeries)
        case "tenants":
            return await tenants(stage, options.rounds)
        case "eavesdrop":
            return await eavesdrop(stage, options.attacks)
        case "spoof":
            return await spoof(stage, options.attacks)
        case "id-reuse":
            return await id_reuse(stage, options.attacks, REUSED_SELECTIONS)
        case "msg-id-claim":
            return await msg_id_claim(stage, options.attacks)
        case "oversize":
            return await oversize(stage, options.oversize)
        case "mcp-stdio":
            return await mcp_lines(stage, options.mcp_rounds)
        case "kill":
            return await kill(stage, "learner", options.kills, options.outcomes)
        case "kill-nats":
            return await kill(stage, "nats", options.server_kills, options.outcomes)
        case "kill-postgres":
            return await kill(stage, "postgres", options.server_kills, options.outcomes)
        case "nats-restart":
            return await nats_restart(stage, options.selections)
        case "fuzz":
            return await fuzz(stage, options.fuzz)


async def run_chaos(options: Options, done: Callable[[str, dict[str, Any]], None]) -> dict[str, Any]:
    """Every chosen scenario on one stack; ``done(name, figures)`` after each. Returns every figure, the options,
    the stack's environment and when and where it ran."""
    result: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "options": asdict(options),
        "stack_env": STACK_ENV,
        "scenarios": {},
    }
    started = time.monotonic()
    async with own_stack(STACK_ENV) as stack:
        assert stack.endpoints is not None
        token = stack.service_env()["TOOLSEL_ADMIN_TOKEN"]
        pool = await create_pool(stack.endpoints.database_url)
        try:
            async with ToolselClient(
                stack.endpoints.nats_url, timeout_s=60, admin_token=token, reconnect_attempts=-1
            ) as client:
                stage = Stage(stack, client, pool, options.seed, uuid4().hex[:8])
                for name in options.scenarios:
                    result["scenarios"][name] = await _scenario(stage, name, options)
                    result["seconds"] = round(time.monotonic() - started, 1)
                    done(name, result)
        finally:
            await pool.close()
    return result
