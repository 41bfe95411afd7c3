"""What one tenant's large sync costs another tenant's small one, and what the indexer's turns at the model cost.

    python scripts/sync_fairness.py model ../shared/bench
        the model's rate on 2,000 bench tool texts (seal_tools, then toolbench_stb), in one call and in slices of
        ``TURN_TEXTS``, twice (no stack needed)
    eval "$(toolsel env)"; python scripts/sync_fairness.py syncs 400 40
        against a running stack, as the operator: a one-tool sync for tenant beta alone; then tenant acme's sync of
        400 tools of 40 example queries each, and 1 s into it beta's one-tool sync again; each sync's seconds

Prints one line per measurement (docs/results.md, "A large sync against another tenant's small one").
"""

import asyncio
import json
import random
import re
import sys
import time
from pathlib import Path

from toolsel.client import ToolselClient
from toolsel.contracts import CategorySpec, PluginSync, ToolSpec
from toolsel.runtime import load_model
from toolsel.services.indexer.embedding import TURN_TEXTS, slices
from toolsel.services.indexer.tool2vec import tool_vectors
from toolsel.settings import Settings

TEXTS = 2_000


def bench_specs(bench: Path) -> list[ToolSpec]:
    """The first ``TEXTS`` declarations of seal_tools and toolbench_stb that a sync would take."""
    specs: list[ToolSpec] = []
    for name in ("seal_tools", "toolbench_stb"):
        for line in (bench / name / "tools.jsonl").open():
            tool = json.loads(line)
            try:
                specs.append(
                    ToolSpec(
                        name=re.sub(r"[^A-Za-z0-9_\-]", "_", tool["name"])[:60] or "tool",
                        description=(tool.get("description") or "tool")[:2000],
                        parameters=tool.get("parameters") or {"type": "object", "properties": {}},
                    )
                )
            except ValueError:  # a declaration sync would refuse
                continue
            if len(specs) == TEXTS:
                return specs
    return specs


def model_rate(bench: Path) -> None:
    model = asyncio.run(load_model(Settings()))
    specs = bench_specs(bench)
    tool_vectors(specs[:64], model)  # warmed up
    for round_ in range(2):
        started = time.perf_counter()
        tool_vectors(specs, model)
        whole = time.perf_counter() - started
        started = time.perf_counter()
        for start, end in slices([1] * len(specs), TURN_TEXTS):
            tool_vectors(specs[start:end], model)
        sliced = time.perf_counter() - started
        rates = f"one call {len(specs) / whole:.1f} texts/s, slices of {TURN_TEXTS} {len(specs) / sliced:.1f}"
        print(f"round {round_}: {rates}")


def declaration(plugin: str, tenant: str, tools: list[ToolSpec]) -> PluginSync:
    return PluginSync(
        plugin_id=plugin,
        plugin_version="1.0.0",
        tenant_id=tenant,
        tools=tools,
        categories=[CategorySpec(name="general")],
    )


def large(tools: int, examples: int) -> PluginSync:
    declared = [
        ToolSpec(
            name=f"t{i}",
            description=f"tool {i}",
            category="general",
            example_queries=[f"find item {i} {j} {random.random()}" for j in range(examples)],
        )
        for i in range(tools)
    ]
    return declaration("largeplug", "acme", declared)


def small() -> PluginSync:
    return declaration("smallplug", "beta", [ToolSpec(name="extra", description=f"extra tool {random.random()}")])


async def timed(client: ToolselClient, sync: PluginSync, label: str) -> None:
    started = time.perf_counter()
    report = await client.sync(sync)
    print(f"{label}: {time.perf_counter() - started:.1f} s ({report.embedded} tools embedded)", flush=True)


async def syncs(tools: int, examples: int) -> None:
    heavy = large(tools, examples)
    size = len(heavy.model_dump_json()) / 1e6
    print(f"large sync: {tools} tools x {examples} example queries = {tools * examples} texts, {size:.2f} MB")
    async with ToolselClient(sync_timeout_s=900) as client:
        await timed(client, small(), "small sync alone")
        running = asyncio.create_task(timed(client, heavy, "large sync"))
        await asyncio.sleep(1.0)
        await timed(client, small(), "small sync while the large one runs")
        await running


if __name__ == "__main__":
    if sys.argv[1:2] == ["model"]:
        model_rate(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["syncs"]:
        asyncio.run(syncs(int(sys.argv[2]), int(sys.argv[3])))
    else:
        sys.exit(__doc__)
