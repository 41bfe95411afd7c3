"""Requests of several needs, trained also as they are served. The selector retrieves a compound request's tools
by the whole request and by each of its needs (``decompose``), so a model trained only on whole requests paired with
each of their tools learns half of what it is asked. ``need_pairs`` adds, for each pair of such a request and one of
its tools, a pair of the same tool and the need nearest it, by a model that never saw the evaluation sets (the
script's stock all-MiniLM-L6-v2).

Measured leaving each set out of training, one epoch of 10,279 pairs either way (docs/results.md, "Requests of
several needs"): metatool, whose requests have one need, +0.8 points of NDCG@10, livemcpbench +0.4, seal_tools
+0.2, toolbench_stb -0.1. The packaged model, toolsel/minilm-tools-3, is trained with them.
"""

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from toolsel.training_data.model import Pair

Split = Callable[[str], list[str]]
"""A request's needs, in order (one: it is not compound)."""
Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]
"""Unit vectors of texts, one row each."""


def need_pairs(pairs: Sequence[Pair], split: Split, embed: Embed) -> list[Pair]:
    """For each pair of a request with several tools that ``split`` cuts into two needs or more, in the pairs'
    order, a pair of the same tool with the need whose vector is nearest the tool's text (the first of equals) as
    its query. A request's pairs are those of one source and query id."""
    requests: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        requests[(pair.source, pair.query_id)].append(i)
    needs: dict[tuple[str, str], list[str]] = {}
    for key, rows in requests.items():
        if len(rows) > 1 and len(parts := split(pairs[rows[0]].query)) > 1:
            needs[key] = parts
    tools = {pairs[i].tool_text for key in needs for i in requests[key]}
    texts = sorted({n for parts in needs.values() for n in parts} | tools)
    vectors = dict(zip(texts, embed(texts), strict=True)) if texts else {}
    matrices = {key: np.stack([vectors[n] for n in parts]) for key, parts in needs.items()}
    found = []
    for pair in pairs:
        key = (pair.source, pair.query_id)
        if key in needs:
            need = int(np.argmax(matrices[key] @ vectors[pair.tool_text]))
            found.append(replace(pair, query=needs[key][need], query_id=f"{pair.query_id}#need{need}"))
    return found
