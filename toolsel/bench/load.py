"""Throughput: selects per second with a fixed number in flight, and each select's time as its caller waits under
that load, from a client in a process of its own, so the client's work never shares a core's time with the
measuring process's event loop."""

import asyncio
import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from toolsel.bench.stats import rate
from toolsel.client import ToolselClient

T = TypeVar("T")


@dataclass(frozen=True)
class Load:
    per_s: float
    """Selects answered per second."""
    waited_s: list[float]
    """Each timed select's seconds from its request to its reply, as its caller waited."""


def throughput(nats_url: str, tenant: str, warm_up: Sequence[str], timed: Sequence[str], in_flight: int) -> Load:
    """Selects per second over ``timed`` with ``in_flight`` requests outstanding, after ``warm_up`` the same way
    (a process just started answers its first requests slower), and each one's time."""
    return asyncio.run(_throughput(nats_url, tenant, warm_up, timed, in_flight))


async def _throughput(nats_url: str, tenant: str, warm_up: Sequence[str], timed: Sequence[str], in_flight: int) -> Load:
    async with ToolselClient(nats_url, timeout_s=60) as client:

        async def run(queries: Sequence[str]) -> list[float]:
            pending = iter(queries)  # shared by the workers: each query is sent once
            waited: list[float] = []

            async def worker() -> None:
                for query in pending:
                    asked = time.perf_counter()
                    await client.select(query=query, tenant_id=tenant, dry_run=True)
                    waited.append(time.perf_counter() - asked)

            await asyncio.gather(*(worker() for _ in range(in_flight)))
            return waited

        await run(warm_up)
        started = time.perf_counter()
        waited = await run(timed)
        return Load(rate(len(timed), time.perf_counter() - started), waited)


async def in_own_process(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in a fresh process (spawned, not forked: nothing of this one's event loop or threads)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)
