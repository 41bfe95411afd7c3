"""Pairs from labelled queries: evaluation queries screened out, each pair tagged with the evaluation set it
counts as, and what one tool or one source contributes capped, deterministically from a seed."""

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from toolsel.evaluation.dataset import Tool, wire_names

from .model import Pair, SourceSet
from .near_duplicates import NearDuplicateIndex, words

ToolText = Callable[[Tool, str], str]
"""The text a tool is embedded from, given the tool and its name on the wire."""


def tool_key(tool: Tool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Name and description as words: the same tool published twice has the same key."""
    return words(tool.name), words(tool.description)


def shared_tools(tools: Iterable[Tool], catalogs: Mapping[str, Iterable[Tool]]) -> dict[str, int]:
    """How many of ``tools`` each catalog also holds."""
    keys = {tool_key(t) for t in tools}
    return {name: len(keys & {tool_key(t) for t in catalog}) for name, catalog in sorted(catalogs.items())}


def assign_group(source: str, declared: str, shared: Mapping[str, int]) -> str:
    """The evaluation set a source's pairs count as: the declared one, or the one it turns out to share tools
    with. A source declared external that shares tools, or one sharing tools with two sets, is refused: its
    pairs could not be left out of one set's training cleanly."""
    sharing = sorted(name for name, n in shared.items() if n)
    if not sharing or sharing == [declared]:
        return declared
    raise ValueError(f"{source}: declared {declared!r} but shares tools with {', '.join(sharing)}")


@dataclass(frozen=True)
class Screened:
    """A source with the queries that repeat an evaluation set's removed, counted by that set."""

    source: SourceSet
    exact: Counter[str] = field(default_factory=Counter)
    near: Counter[str] = field(default_factory=Counter)


def screen(source: SourceSet, index: NearDuplicateIndex, own_set: str | None = None) -> Screened:
    """Drop the queries that repeat, exactly or nearly, a query of any indexed set other than ``own_set``."""
    exact: Counter[str] = Counter()
    near: Counter[str] = Counter()
    kept = []
    for query in source.queries:
        if (owner := index.exact(query.text, ignore=own_set)) is not None:
            exact[owner] += 1
        elif (owner := index.near(query.text, ignore=own_set)) is not None:
            near[owner] += 1
        else:
            kept.append(query)
    return Screened(replace(source, queries=tuple(kept)), exact, near)


def source_pairs(source: SourceSet, group: str, text_of: ToolText) -> list[Pair]:
    """One pair per (query, relevant tool); ``tool_id`` is ``<catalog>/<name on the wire>``, so sources over the
    same catalog point at the same tools."""
    wire = wire_names([t.name for t in source.tools])
    tools = {t.name: t for t in source.tools}
    texts: dict[str, str] = {}
    pairs = []
    for query in source.queries:
        for name in query.relevant:
            if name not in texts:
                texts[name] = text_of(tools[name], wire[name])
            pairs.append(
                Pair(query.id, query.text, f"{source.catalog}/{wire[name]}", texts[name], source.source, group)
            )
    return pairs


def _sample(items: Sequence[Pair], limit: int, seed: str) -> list[Pair]:
    ordered = sorted(items, key=lambda p: (p.query_id, p.tool_id))
    return ordered if len(ordered) <= limit else random.Random(seed).sample(ordered, limit)


def capped(pairs: Sequence[Pair], max_per_tool: int, max_per_source: int, seed: int) -> list[Pair]:
    """At most ``max_per_tool`` pairs of one tool from one source, then at most ``max_per_source`` pairs from one
    source, each drawn at random from a seed of its own (the same input and seed give the same pairs)."""
    by_tool: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_tool[pair.source, pair.tool_id].append(pair)
    by_source: dict[str, list[Pair]] = defaultdict(list)
    for (source, tool_id), own in sorted(by_tool.items()):
        by_source[source].extend(_sample(own, max_per_tool, f"{seed}:{source}:{tool_id}"))
    kept = [p for source, own in sorted(by_source.items()) for p in _sample(own, max_per_source, f"{seed}:{source}")]
    return sorted(kept, key=lambda p: (p.group, p.source, p.query_id, p.tool_id))
