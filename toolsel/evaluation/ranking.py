"""Load a catalog through the real sync path and rank queries through the real selector, over NATS."""

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from toolsel.client import ToolselClient
from toolsel.contracts import PluginSync, SelectFilters, SelectReply, SelectRequest
from toolsel.contracts.selection import QUERY_MAX
from toolsel.evaluation.dataset import Query, Tool, catalog_syncs, wire_names
from toolsel.render import console
from toolsel.waiting import eventually

CONCURRENCY = 16
"""Selects in flight at once."""
Retrieval = Literal["hybrid", "vector", "bm25"]


@dataclass(frozen=True)
class BenchCatalog:
    """A synced catalog: its plugins, the tenant it lives in, and wire name -> the set's tool name."""

    plugins: list[str]
    tenant_id: str
    names: dict[str, str]

    def filters(self) -> SelectFilters:
        return SelectFilters(plugins=self.plugins)

    def ranked(self, reply: SelectReply) -> list[str]:
        """The set's names of the tools a reply returned, in order."""
        return [self.names[t.name] for t in reply.tools if t.plugin_id in self.plugins]

    def joined(self, other: "BenchCatalog") -> "BenchCatalog":
        """This catalog and another one's plugins and names, seen as this catalog's tenant."""
        return BenchCatalog([*self.plugins, *other.plugins], self.tenant_id, {**self.names, **other.names})


async def load_catalog(
    client: ToolselClient,
    syncs: Sequence[PluginSync],
    names: Mapping[str, str],
    timeout_s: float = 600,
    tenant_id: str | None = None,
) -> BenchCatalog:
    """Sync every plugin (the indexer embeds before it answers; ``names``: the set's name -> wire name), then
    wait until the selector serves them all, with vectors: a vector-only probe for the last tool finds it.
    ``tenant_id``: who selects (default: the syncs' tenant; needed when they are shared, ``*``)."""
    for sync in syncs:
        await client.sync(sync)
    tenant = tenant_id or syncs[0].tenant_id
    catalog = BenchCatalog([s.plugin_id for s in syncs], tenant, {w: n for n, w in names.items()})
    total = sum(len(s.tools) for s in syncs)
    last = syncs[-1].tools[-1]
    probe = (last.example_queries[0] if last.example_queries else last.description) or last.name

    async def served() -> bool:
        reply = await client.select(
            query=probe[:QUERY_MAX],
            tenant_id=catalog.tenant_id,
            k=50,
            dry_run=True,
            retrieval="vector",
            rerank=False,
            filters=catalog.filters(),
        )
        found = any(t.name == last.name and t.breakdown.similarity > 0 for t in reply.tools)
        return reply.candidate_counts.get("filtered") == total and found

    if await eventually(served, timeout_s, every_s=0.2):
        return catalog
    raise TimeoutError(f"the selector did not serve the {total} synced tools within {timeout_s:.0f} s")


async def sync_catalog(
    client: ToolselClient,
    tools: Sequence[Tool],
    prefix: str,
    tenant: str,
    examples: Mapping[str, Sequence[str]] | None = None,
    select_as: str | None = None,
) -> BenchCatalog:
    """Sync ``tools`` as plugins ``<prefix>-<i>`` of ``tenant`` and wait until the selector serves them."""
    names = wire_names([t.name for t in tools])
    with console.status(f"syncing and embedding {len(tools)} tools ({prefix})"):
        return await load_catalog(
            client, catalog_syncs(tools, names, prefix, tenant, examples), names, tenant_id=select_as
        )


async def rank(
    client: ToolselClient,
    catalog: BenchCatalog,
    queries: Sequence[Query],
    *,
    retrieval: Retrieval,
    rerank: bool,
    k: int | Literal["auto"],
    seed: int,
    advance: Callable[[int], None] = lambda n: None,
    confidences: list[list[float]] | None = None,
    answers: list[tuple[int, int]] | None = None,
) -> list[list[str]]:
    """Each query's ranking (dry run, seeded), CONCURRENCY selects at a time; ``confidences`` gathers each
    ranked tool's confidence, in the same order, and ``answers`` each whole answer's tools and
    ``tokens.selected``, both of every tool returned: a pinned tool outside the catalog costs tokens too."""

    async def one(query: Query) -> tuple[list[str], list[float], tuple[int, int]]:
        request = SelectRequest(
            query=query.text[:QUERY_MAX],
            tenant_id=catalog.tenant_id,
            k=k,
            dry_run=True,
            seed=seed,
            retrieval=retrieval,
            rerank=rerank,
            filters=catalog.filters(),
        )
        reply = await client.select(request)
        sure = [t.confidence for t in reply.tools if t.plugin_id in catalog.plugins]
        return catalog.ranked(reply), sure, (len(reply.tools), reply.tokens.selected)

    out: list[list[str]] = []
    for start in range(0, len(queries), CONCURRENCY):
        chunk = queries[start : start + CONCURRENCY]
        for names, sure, whole in await asyncio.gather(*(one(q) for q in chunk)):
            out.append(names)
            if confidences is not None:
                confidences.append(sure)
            if answers is not None:
                answers.append(whole)
        advance(len(chunk))
    return out
