"""What a source yields (a catalog and queries labelled with its tool names) and what a pair is."""

from dataclasses import dataclass

from toolsel.evaluation.dataset import Tool

EXTERNAL = "external"
"""The group of pairs that share neither queries nor tools with any evaluation set."""


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    text: str
    relevant: tuple[str, ...]
    """Names of tools of the source's catalog."""


@dataclass(frozen=True)
class SourceSet:
    """One source's queries over one catalog; ``catalog`` names it (an evaluation set's name when the source
    reuses that set's tools, so the pairs point at the very tools that set is evaluated on)."""

    source: str
    catalog: str
    tools: tuple[Tool, ...]
    queries: tuple[LabelledQuery, ...]


@dataclass(frozen=True)
class Pair:
    query_id: str
    query: str
    tool_id: str
    tool_text: str
    source: str
    group: str
