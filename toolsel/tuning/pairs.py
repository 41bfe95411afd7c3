"""Training pairs: read, chosen for a run (groups left out, a budget shared fairly between the groups) and cut into
length-bucketed batches in which no tool and no query appears twice (each pair's tool is the others' negative)."""

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

BUCKET_BATCHES = 32
"""Batches whose pairs are sorted by length together: a batch is padded to its longest text, so texts of like
length go together, while the shuffle before and after keeps the batches' order random."""


@dataclass(frozen=True)
class Pair:
    query: str
    tool_id: str
    tool_text: str
    group: str
    """The evaluation set the pair counts as (or ``external``), for leaving one set out."""


def read_pairs(path: Path) -> list[Pair]:
    """The pairs of a JSON-lines file of ``{query, tool_id, tool_text, group}`` objects (other fields ignored)."""
    pairs = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            try:
                pairs.append(Pair(str(row["query"]), str(row["tool_id"]), str(row["tool_text"]), str(row["group"])))
            except KeyError as missing:
                raise ValueError(f"{path}:{number}: a pair needs {missing}") from None
    return pairs


def choose(pairs: Sequence[Pair], *, leave_out: Iterable[str] = (), budget: int, seed: int) -> list[Pair]:
    """At most ``budget`` pairs, none of a group in ``leave_out``, shared between the groups as evenly as their
    sizes allow (a small group gives all it has, the rest is split between the larger ones), each group's share a
    seeded sample; in the seeded order of a shuffle."""
    if budget < 1:
        raise ValueError("the pair budget must be >= 1")
    left_out = set(leave_out)
    by_group: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        if pair.group not in left_out:
            by_group[pair.group].append(pair)
    rng = random.Random(seed)
    chosen: list[Pair] = []
    for group, share in fair_shares({g: len(p) for g, p in by_group.items()}, budget).items():
        chosen.extend(rng.sample(sorted(by_group[group], key=_key), share))
    rng.shuffle(chosen)
    return chosen


def fair_shares(sizes: dict[str, int], budget: int) -> dict[str, int]:
    """Each group's share of ``budget``: equal shares, a group smaller than its share giving all it has and the
    remainder going to the others (water-filling)."""
    shares: dict[str, int] = {}
    open_groups = sorted(sizes, key=lambda g: (sizes[g], g))
    left = budget
    while open_groups:
        equal = left // len(open_groups)
        group = open_groups.pop(0)
        share = min(sizes[group], equal if open_groups else left)
        shares[group] = share
        left -= share
    return shares


def _key(pair: Pair) -> tuple[str, str, str]:
    return pair.group, pair.tool_id, pair.query


def batches(pairs: Sequence[Pair], size: int, seed: int) -> list[list[Pair]]:
    """Batches of ``size`` pairs (the last may be smaller), within a batch no tool twice and no query twice, of
    texts of like length (buckets of ``BUCKET_BATCHES`` batches sorted by tool text length), in seeded order. A
    pair that would repeat a tool or query waits for the next bucket; at the end what waited is batched apart,
    and only pairs that can form no batch of two (one tool's or one query's pairs alone) are dropped."""
    if size < 2:
        raise ValueError("in-batch negatives need batches of at least 2 pairs")
    rng = random.Random(seed)
    shuffled = list(pairs)
    rng.shuffle(shuffled)
    span = size * BUCKET_BATCHES
    result: list[list[Pair]] = []
    waiting: list[Pair] = []
    for start in range(0, len(shuffled), span):
        bucket = sorted(waiting + shuffled[start : start + span], key=lambda p: (len(p.tool_text), len(p.query)))
        full, waiting = _fill(bucket, size)
        result.extend(full)
    while waiting:  # what waited (repeats of a tool or query) makes batches of its own, until none forms
        last, waiting = _fill(waiting, size, keep_partial=True)
        last = [b for b in last if len(b) >= 2]
        if not last:
            break
        result.extend(last)
    rng.shuffle(result)
    return result


def _fill(ordered: list[Pair], size: int, *, keep_partial: bool = False) -> tuple[list[list[Pair]], list[Pair]]:
    """Consecutive batches of ``size`` distinct-tool, distinct-query pairs from ``ordered``; the pairs left over
    (a repeat, or too few to fill a batch) are returned to wait for the next bucket."""
    done: list[list[Pair]] = []
    batch: list[Pair] = []
    tools: set[str] = set()
    queries: set[str] = set()
    waiting: list[Pair] = []
    for pair in ordered:
        if pair.tool_id in tools or pair.query in queries:
            waiting.append(pair)
            continue
        batch.append(pair)
        tools.add(pair.tool_id)
        queries.add(pair.query)
        if len(batch) == size:
            done.append(batch)
            batch, tools, queries = [], set(), set()
    if keep_partial and batch:
        done.append(batch)
    else:
        waiting = batch + waiting
    return done, waiting
