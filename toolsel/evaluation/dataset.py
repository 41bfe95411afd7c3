"""Read an evaluation set (``tools.jsonl`` + ``queries.jsonl``, optional ``baselines.json``) into plugin syncs."""

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolsel.contracts import PluginSync, ToolSpec

MAX_TOOLS_PER_PLUGIN = 5000
MAX_SYNC_BYTES = 800_000
"""A sync travels as one NATS message (1 MB by default): larger catalogs go as several plugins."""
MAX_NAME = 128
MAX_DESCRIPTION = 8000
UNNAMEABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""What a tool name may not hold: control characters and lone surrogates (made spaces)."""
MAX_SUBSET_VALUES = 30
"""An extra string field of the queries with 2..this many distinct values is a subset label."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any] | None


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: frozenset[str]
    extras: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchSet:
    name: str
    tools: list[Tool]
    queries: list[Query]
    baselines: dict[str, Any] | None
    dropped_queries: int
    """Queries none of whose relevant tools is in the catalog."""
    removed_labels: int
    """Relevant names outside the catalog taken off the queries kept (scored on their other tools alone)."""
    queries_with_removed_labels: int

    def label_counts(self) -> dict[str, int]:
        """What the labels outside the catalog cost, for the JSON: the numbers a reader needs to compare runs."""
        return {
            "queries_without_known_tools": self.dropped_queries,
            "labels_outside_catalog": self.removed_labels,
            "queries_with_labels_outside_catalog": self.queries_with_removed_labels,
        }

    def labels_note(self) -> str:
        """The same for the terminal, "" when every label is a tool of the catalog: a missing label scores nothing,
        so a query that lost one reads as better answered than it was."""
        if not self.dropped_queries and not self.removed_labels:
            return ""
        return (
            f"labels not in tools.jsonl: {self.removed_labels} taken off {self.queries_with_removed_labels} "
            f"queries (scored on their other tools); {self.dropped_queries} queries with none in it not evaluated"
        )


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def load_set(folder: Path) -> BenchSet:
    """Tools and labelled queries of one folder; relevant names outside the catalog are dropped (and counted)."""
    tools = [
        Tool(str(t["name"]), str(t.get("description") or ""), t.get("parameters") or None)
        for t in _lines(folder / "tools.jsonl")
    ]
    names = {t.name for t in tools}
    if len(names) != len(tools):
        raise ValueError(f"{folder / 'tools.jsonl'}: tool names must be unique")
    queries, dropped, removed, lessened = [], 0, 0, 0
    for q in _lines(folder / "queries.jsonl"):
        labelled = frozenset(str(n) for n in q["relevant"])
        relevant = labelled & names
        if not relevant:
            dropped += 1
            continue
        removed += len(labelled) - len(relevant)
        lessened += relevant != labelled
        extras = {k: v for k, v in q.items() if k not in ("id", "query", "relevant") and isinstance(v, str)}
        queries.append(Query(str(q["id"]), str(q["query"]), relevant, extras))
    baselines_path = folder / "baselines.json"
    baselines = json.loads(baselines_path.read_text()) if baselines_path.exists() else None
    return BenchSet(folder.resolve().name, tools, queries, baselines, dropped, removed, lessened)


def subset_fields(queries: Sequence[Query]) -> list[str]:
    """Extra string fields that label subsets: present on every query, with 2..MAX_SUBSET_VALUES values."""
    if not queries:
        return []
    common = set.intersection(*(set(q.extras) for q in queries))
    return sorted(f for f in common if 2 <= len({q.extras[f] for q in queries}) <= MAX_SUBSET_VALUES)


def wire_names(names: Sequence[str]) -> dict[str, str]:
    """Each name made a valid, unique tool name (no ``/``, control character or lone surrogate, no leading space,
    neither ``.`` nor ``..``, at most 128 characters): any set in the format is read, whatever its names."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = re.sub(r"^\s+", "", UNNAMEABLE.sub(" ", name.replace("/", "∕")))[:MAX_NAME]
        base = "tool" if base in ("", ".", "..") else base
        wire, n = base, 1
        while wire in taken:
            n += 1
            suffix = f"~{n}"
            wire = base[: MAX_NAME - len(suffix)] + suffix
        taken.add(wire)
        out[name] = wire
    return out


def tool_spec(tool: Tool, wire_name: str, examples: Sequence[str] = ()) -> ToolSpec:
    """The declaration of one tool: its name, description, JSON-schema parameters and example queries."""
    spec = ToolSpec(name=wire_name, description=tool.description[:MAX_DESCRIPTION], example_queries=list(examples))
    if isinstance(tool.parameters, dict):
        spec = spec.model_copy(update={"parameters": tool.parameters})
    return spec


def _chunks(specs: Sequence[ToolSpec]) -> Iterator[list[ToolSpec]]:
    """Consecutive runs of at most MAX_TOOLS_PER_PLUGIN tools and about MAX_SYNC_BYTES of JSON."""
    chunk: list[ToolSpec] = []
    size = 0
    for spec in specs:
        own = len(spec.model_dump_json())
        if chunk and (len(chunk) == MAX_TOOLS_PER_PLUGIN or size + own > MAX_SYNC_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(spec)
        size += own
    if chunk:
        yield chunk


def catalog_syncs(
    tools: Sequence[Tool],
    names: Mapping[str, str],
    plugin_prefix: str,
    tenant_id: str,
    examples: Mapping[str, Sequence[str]] | None = None,
) -> list[PluginSync]:
    """The catalog as plugins ``<prefix>-0``, ``<prefix>-1``, … each small enough for one sync message."""
    examples = examples or {}
    specs = [tool_spec(t, names[t.name], examples.get(t.name, ())) for t in tools]
    return [
        PluginSync(plugin_id=f"{plugin_prefix}-{i}", plugin_version="1.0.0", tenant_id=tenant_id, tools=chunk)
        for i, chunk in enumerate(_chunks(specs))
    ]
