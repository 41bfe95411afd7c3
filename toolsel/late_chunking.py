"""A compound request's parts read in their request's context (late chunking): the model runs once over the whole
request, and each part's vector is the mean of the token vectors that fall within the part's characters.

A part embedded alone costs a second model call for the same words, and loses what the rest of the request says
about it ("it" in "then transcode it"). Measured in process on the four shared sets (the product's selector, full
pipeline, NDCG@10 against parts embedded alone): metatool 0.709 / 0.709, toolbench_stb 0.753 → 0.758, seal_tools
0.928 → 0.930, livemcpbench 0.438 → 0.439 (docs/results.md, Performance)."""

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Span = tuple[int, int]
"""Characters [start, end) of the request."""


def part_spans(query: str, parts: Sequence[str]) -> list[Span | None]:
    """Where each part lies in the query, searched in order from the end of the one before (a repeated part is
    its next occurrence); None for a part the query does not contain as written."""
    spans: list[Span | None] = []
    start = 0
    for part in parts:
        at = query.find(part, start) if part else -1
        if at < 0:
            at = query.find(part) if part else -1
        if at < 0:
            spans.append(None)
            continue
        spans.append((at, at + len(part)))
        start = at + len(part)
    return spans


def span_means(
    states: npt.NDArray[np.float32], offsets: Sequence[tuple[int, int]], spans: Sequence[Span | None]
) -> list[npt.NDArray[np.float32] | None]:
    """Per span, the unit mean of the token vectors (``states``, one row per token, ``offsets`` each token's
    characters) that lie wholly within it; special tokens (empty offsets) never count. None for a span with no
    such token (the model's length cut it off, or it was None), and for one whose tokens stop short of its end
    because the model's length cut the request there: that part is better embedded alone."""
    bounds = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    real = bounds[:, 1] > bounds[:, 0]
    last = int(bounds[real, 1].max()) if real.any() else 0
    out: list[npt.NDArray[np.float32] | None] = []
    for span in spans:
        if span is None or span[1] > last:
            out.append(None)
            continue
        inside = real & (bounds[:, 0] >= span[0]) & (bounds[:, 1] <= span[1])
        if not inside.any():
            out.append(None)
            continue
        mean = states[inside].mean(axis=0)
        norm = float(np.linalg.norm(mean))
        out.append((mean / norm).astype(np.float32) if norm > 0 else None)
    return out
