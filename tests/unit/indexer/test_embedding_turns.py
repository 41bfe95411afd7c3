"""Embedding passes that run together take turns at the model a slice at a time: a small sync waits for a slice
of a large one, not all of it."""

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from toolsel.contracts import ToolSpec
from toolsel.embedder import Embedder, Matrix
from toolsel.services.indexer.embedding import TURN_TEXTS, embed_pending, slices
from toolsel.store import registry

DIM = 8


def test_slices_hold_at_most_their_texts_and_a_large_tool_alone() -> None:
    assert slices([200, 200, 200, 1], 512) == [(0, 2), (2, 4)]
    assert slices([600, 1, 1], 512) == [(0, 1), (1, 3)]
    assert slices([1] * 5, 2) == [(0, 2), (2, 4), (4, 5)]
    assert slices([], 512) == []


class Store:
    """The registry's two statements an embedding pass runs, over tools held in memory."""

    def __init__(self, tools: dict[str, list[ToolSpec]]) -> None:
        self.pending = [
            {"id": i, "plugin_id": plugin, "spec": spec.model_dump_json(), "embed_hash": f"h{i}"}
            for i, (plugin, spec) in enumerate((p, s) for p, specs in tools.items() for s in specs)
        ]
        self.stored: list[int] = []

    async def fetch(self, sql: str, limit: int, plugin_id: str | None) -> list[dict[str, Any]]:
        assert sql == registry.TO_EMBED
        return [r for r in self.pending if plugin_id in (None, r["plugin_id"])][:limit]

    async def executemany(self, sql: str, rows: Sequence[tuple[int, Any, str]]) -> None:
        assert sql == registry.STORE_VECTOR
        done = {row[0] for row in rows}
        self.stored.extend(done)
        self.pending = [r for r in self.pending if r["id"] not in done]


class SlowModel(Embedder):
    """Each call takes a while and is recorded by the first text's plugin (texts start with it)."""

    def __init__(self) -> None:
        self.dim = DIM
        self.calls: list[str] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(texts[0].split(":")[0])
        time.sleep(0.05)
        return np.ones((len(texts), DIM), dtype=np.float32)


def tools(plugin: str, count: int, examples: int) -> list[ToolSpec]:
    return [
        ToolSpec(
            name=f"tool_{i}",
            description="d",
            example_queries=[f"{plugin}: query {j}" for j in range(examples)],
        )
        for i in range(count)
    ]


async def test_a_small_pass_waits_for_one_slice_of_a_large_one_not_all_of_it() -> None:
    per_tool = TURN_TEXTS // 4  # four tools a slice
    store = Store({"big": tools("big", 16, per_tool), "small": tools("small", 1, 1)})
    model, turn = SlowModel(), asyncio.Lock()
    big = asyncio.create_task(embed_pending(store, model, turn, "big"))  # type: ignore[arg-type]
    await asyncio.sleep(0.01)  # the large pass is at the model
    small = await embed_pending(store, model, turn, "small")  # type: ignore[arg-type]
    assert not big.done()
    assert small.tools == 1
    assert (await big).tools == 16
    assert model.calls == ["big", "small", "big", "big", "big"]
    assert store.pending == []
