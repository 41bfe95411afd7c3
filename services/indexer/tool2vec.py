"""Tool vectors: the mean of a tool's example-query embeddings, or its text when it has none."""

from collections.abc import Sequence

import numpy as np

from toolsel.contracts import ToolSpec
from toolsel.embedder import Embedder, Matrix, mean_of_normalised
from toolsel.services.indexer.hashing import embedding_text


def tool_vectors(specs: Sequence[ToolSpec], embedder: Embedder) -> Matrix:
    """One unit vector per tool, embedding every text of the batch in one pass."""
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for spec in specs:
        own = list(spec.example_queries) or [embedding_text(spec)]
        spans.append((len(texts), len(texts) + len(own)))
        texts.extend(own)
    rows = embedder.embed(texts)
    if not specs:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.vstack([mean_of_normalised([rows[start:end]]) for start, end in spans])
