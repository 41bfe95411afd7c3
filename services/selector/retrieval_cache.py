"""The hot-query cache (seed 001): a repeated query's retrieval, kept while everything it was computed from is.

Seed 001 caches a common query's tools for an hour on the client, so what the service learns in that hour
never reaches it. Here only retrieval (and the candidates drawn from it) is kept, never the answer: the rerank
(posteriors, Thompson draws, recency, the user's history) runs on every request. An entry is used only while the
catalog copy, the review index and the scope's usage view it was computed from are the very objects the selector
holds, so a registry change, a quarantine, a review or anything learnt makes it miss; the request's visible rows
(tenant, rules, page and filters) are part of its key. It holds those sources by weak reference, so a kept entry
never keeps a replaced catalog in memory, and makes its arrays read-only, so no later stage can change a kept copy.
"""

import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from toolsel.services.selector.stages import Mask

T = TypeVar("T")


def pool_digest(pool: Mask) -> bytes:
    """A short fingerprint of the rows a request may return (one bit per catalog row, hashed)."""
    return hashlib.blake2b(np.packbits(pool).tobytes(), digest_size=16).digest()


def freeze(*arrays: np.ndarray) -> None:
    """Make arrays read-only: a stage that tried to change a cached copy fails loudly instead."""
    for array in arrays:
        array.flags.writeable = False


Source = object | None
"""What an entry was computed from: a copy the selector holds (weakly referenced), or None for none."""


def _refer(source: Source) -> "weakref.ref[object] | None":
    return None if source is None else weakref.ref(source)


@dataclass
class _Entry(Generic[T]):
    sources: "tuple[weakref.ref[object] | None, ...]"
    value: T

    def computed_from(self, sources: tuple[Source, ...]) -> bool:
        """Whether these are the very copies (identity: a replaced copy equal to the old one is still new)."""
        return all(
            (r is None and s is None) or (r is not None and r() is s)
            for r, s in zip(self.sources, sources, strict=True)
        )


@dataclass
class RetrievalCache(Generic[T]):
    """At most ``size`` retrievals by key, least recently used dropped first; 0 keeps none."""

    size: int
    _entries: OrderedDict[Hashable, _Entry[T]] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ValueError("size must be >= 0")

    def get(self, key: Hashable, sources: tuple[Source, ...]) -> T | None:
        """The value kept for ``key`` if it was computed from these very ``sources``; a stale one is dropped."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if not entry.computed_from(sources):
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry.value

    def put(self, key: Hashable, sources: tuple[Source, ...], value: T) -> None:
        if self.size == 0:
            return
        self._entries[key] = _Entry(tuple(_refer(s) for s in sources), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
