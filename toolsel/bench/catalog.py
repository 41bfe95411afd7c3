"""The benchmark's catalog and queries, pooled from every evaluation set of a folder (pure once loaded)."""

import random
from collections.abc import Sequence
from pathlib import Path

from toolsel.evaluation.dataset import BenchSet, Tool, load_set

MAX_QUERY_CHARS = 500
"""Benchmark queries are cut to this: agents' queries are short, and long ones only measure the tokenizer."""


def pooled_sets(folder: Path) -> list[BenchSet]:
    """Every set under ``folder`` (each sub-folder with tools.jsonl and queries.jsonl), by name."""
    return [load_set(d) for d in sorted(folder.iterdir()) if (d / "tools.jsonl").is_file()]


def catalog_of(tools: Sequence[Tool], size: int) -> list[Tool]:
    """The first ``size`` pooled tools with unique names; past the pool, numbered copies (``name~copy2``...), so a
    larger catalog always starts with a smaller one and syncing it adds only the rest."""
    if not tools:
        raise ValueError("no tools to build a catalog from")
    unique = list({t.name: t for t in tools}.values())
    out: list[Tool] = []
    for i in range(size):
        tool, copy = unique[i % len(unique)], i // len(unique)
        out.append(tool if copy == 0 else Tool(f"{tool.name}~copy{copy + 1}", tool.description, tool.parameters))
    return out


def interleaved(per_set: Sequence[Sequence[str]], seed: int) -> list[str]:
    """Every set's texts, each set in a seeded shuffle, taken one set at a time in turn: any run of the result
    mixes the sets as the whole does, so each catalog size is timed on the same kind of queries (in the sets'
    order, the smallest catalog got one set's long requests and the largest another's short ones)."""
    shuffled = []
    for i, texts in enumerate(per_set):
        order = list(texts)
        random.Random(seed + i).shuffle(order)
        shuffled.append(order)
    longest = max((len(texts) for texts in shuffled), default=0)
    return [texts[j] for j in range(longest) for texts in shuffled if j < len(texts)]


def bench_queries(texts: Sequence[str], count: int) -> list[str]:
    """``count`` distinct queries (cut to MAX_QUERY_CHARS): the texts in order, numbered once they run out."""
    cut = [t[:MAX_QUERY_CHARS] for t in texts if t.strip()]
    if not cut:
        raise ValueError("no queries")
    return [
        cut[i % len(cut)] if i < len(cut) else f"{cut[i % len(cut)][: MAX_QUERY_CHARS - 8]} ({i})" for i in range(count)
    ]
