"""What one identity's burst of selects costs another identity's select (docs/results.md, "One identity's burst of
selects against another's select").

    python scripts/select_fairness.py ../shared/bench 3000 [--before 10] [--during 15]

Starts a stack of its own (the selector's settings from the environment: ``TOOLSEL_SELECTS_HELD=8 python
scripts/...`` measures a selector that takes no more requests than it runs), syncs the first ``TOOLS`` metatool
tools as shared plugins, and makes the identities acme/bot and victim/bot. The victim times ``--before`` dry-run
selects ``PAUSE_S`` apart. Then a process of its own sends acme's burst of N concurrent dry-run selects, and as it
starts the victim times ``--during`` more. Every query is a distinct metatool query, so no cache answers one.
Prints the victim's median and slowest select (and each, in ms), the burst's answered and refused
(``rate_limited``) selects and its seconds, and the selector's own counters after.
"""

import argparse
import asyncio
import multiprocessing
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

from toolsel import identities
from toolsel.bench.catalog import bench_queries
from toolsel.client import ToolselClient
from toolsel.errors import ToolselError, TooManyAttempts
from toolsel.evaluation.dataset import catalog_syncs, load_set, wire_names
from toolsel.evaluation.ranking import load_catalog
from toolsel.stack import temporary_stack

TOOLS = 120
"""The audit's catalog: two shared plugins of 60 metatool tools each."""
WARM_UP = 20
"""Selects sent first, untimed: a selector just started answers its first ones slower."""
PAUSE_S = 0.3
"""Between the victim's selects, as an agent's would come."""
K = 3
BURST_TIMEOUT_S = 300.0
"""The burst's client waits this long for each reply: its excess is refused, the rest answered in turn."""
VICTIM_TIMEOUT_S = 120.0


def burst(url: str, queries: Sequence[str], told: "Queue[Any]") -> None:
    """Send every query at once as the identity of ``url``; puts ``"sending"`` on ``told`` once they are handed
    to its NATS client, then the outcomes (``answered``, ``rate_limited``, any other code) and the seconds they took."""
    asyncio.run(_burst(url, queries, told))


async def _burst(url: str, queries: Sequence[str], told: "Queue[Any]") -> None:
    outcomes: Counter[str] = Counter()

    async def one(query: str) -> None:
        try:
            await client.select(query=query, k=K, dry_run=True)
        except TooManyAttempts:
            outcomes["rate_limited"] += 1
        except ToolselError as error:
            outcomes[error.detail.code.value] += 1
        else:
            outcomes["answered"] += 1

    async with ToolselClient(url, timeout_s=BURST_TIMEOUT_S) as client:
        started = time.perf_counter()
        sending = [asyncio.create_task(one(q)) for q in queries]
        await asyncio.sleep(0)  # each one's request handed to the NATS client before the victim is told
        told.put("sending")
        await asyncio.gather(*sending)
        told.put((dict(outcomes), time.perf_counter() - started))


async def victim(client: ToolselClient, queries: Sequence[str], label: str) -> None:
    """Each query in turn, ``PAUSE_S`` apart; prints their milliseconds (an error in place of one that failed)."""
    waited: list[int] = []
    for query in queries:
        asked = time.perf_counter()
        try:
            await client.select(query=query, k=K, dry_run=True)
        except ToolselError as error:
            print(f"  victim's select failed: {error}")
        waited.append(round((time.perf_counter() - asked) * 1000))
        await asyncio.sleep(PAUSE_S)
    print(f"victim {label}: median {statistics.median(waited):.0f} ms, slowest {max(waited)} ms; each: {waited}")


async def against_burst(url: str, victims: ToolselClient, mine: Sequence[str], theirs: Sequence[str]) -> None:
    """The victim's selects while acme's burst of ``theirs`` runs, sent from a process of its own (spawned: nothing
    of this one's event loop or threads), then what became of the burst."""
    spawn = multiprocessing.get_context("spawn")
    told: Queue[Any] = spawn.Queue()
    sender = spawn.Process(target=burst, args=(url, theirs, told))
    sender.start()
    try:
        assert await asyncio.to_thread(told.get, True, 120) == "sending"
        await victim(victims, mine, f"during acme's burst of {len(theirs)}")
        outcomes, seconds = await asyncio.to_thread(told.get, True, BURST_TIMEOUT_S + 60)
    finally:
        await asyncio.to_thread(sender.join)
    print(f"burst of {len(theirs)}: {outcomes} in {seconds:.1f} s")


async def measure(bench: Path, size: int, before: int, during: int) -> None:
    metatool = load_set(bench / "metatool")
    tools = metatool.tools[:TOOLS]
    names = wire_names([t.name for t in tools])
    queries = bench_queries(list(dict.fromkeys(q.text for q in metatool.queries)), WARM_UP + before + during + size)
    warm_up, mine, theirs = queries[:WARM_UP], queries[WARM_UP : WARM_UP + before + during], queries[-size:]
    print(f"{TOOLS} shared metatool tools; acme/bot's burst of {size}; victim/bot's selects {PAUSE_S} s apart")
    async with temporary_stack({}, "select-fairness-") as (endpoints, stack):
        assert stack.nats is not None
        async with ToolselClient(endpoints.nats_url, timeout_s=60) as operator:
            await load_catalog(operator, catalog_syncs(tools, names, "shared", "*"), names, tenant_id="victim")
            home, url = stack.settings.home, stack.nats.url
            acme, victims = (identities.create(home, t, "bot").nats_url(url) for t in ("acme", "victim"))
            async with ToolselClient(victims, timeout_s=VICTIM_TIMEOUT_S) as client:
                for query in warm_up:
                    await client.select(query=query, k=K, dry_run=True)
                await victim(client, mine[:before], "before")
                await against_burst(acme, client, mine[before:], theirs)
            health = (await operator.health("selector")).details
            counters = {name: health.get(name) for name in ("selects_refused", "selects_waiting")}
            print(f"selector after: {counters}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", type=Path, help="the shared bench folder (with metatool/)")
    parser.add_argument("burst", type=int, help="acme's concurrent selects")
    parser.add_argument("--before", type=int, default=10, help="the victim's selects before the burst")
    parser.add_argument("--during", type=int, default=15, help="the victim's selects from the burst's start")
    args = parser.parse_args(argv)
    asyncio.run(measure(args.bench, args.burst, args.before, args.during))


if __name__ == "__main__":
    main()
