"""How a catalog copy's rows move when a few tools change, and the lookups kept as sorted (key, row) pairs that
follow them by array operations: the kept pairs renumbered, the changed rows' dropped, the new ones inserted where
they sort. Nothing is regrouped row by row in Python, so a copy costs the changed rows plus a few passes of
memcpy-speed work."""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Self, TypeVar

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
UNUSED_CODES_KEPT = 0.25
"""The share of a lookup's codes (a vocabulary's words, a filter's labels) that may belong to no row any more
before the lookup is numbered again without them: codes only grow as copies are spliced, and a selector that never
reads its catalog whole would otherwise keep every word and label it ever saw."""
T = TypeVar("T")
G = TypeVar("G", bound=np.generic)


@dataclass(frozen=True)
class Renumbering:
    """The rows of a new copy against the old one's."""

    kept: Rows
    """New row -> the old row it keeps, -1 for a row new to this copy."""
    renumbered: Rows
    """Old row -> its new row, -1 for a row not kept."""
    added: Rows
    """The new copy's rows that are new, ascending."""

    runs: list[tuple[int, int]]
    """The new copy in runs of rows: (old row, count) for kept rows that were neighbours, (-1, 1) for a new row.
    A few changed rows make a few runs, so a list is copied by a few slices."""

    @classmethod
    def of(cls, kept: Rows, old_size: int) -> Self:
        """From ``kept``, whose kept old rows ascend (a copy keeps its rows' order)."""
        renumbered = np.full(old_size, -1, dtype=np.int64)
        held = np.flatnonzero(kept >= 0)
        renumbered[kept[held]] = held
        breaks = np.flatnonzero((kept[1:] != kept[:-1] + 1) | (kept[1:] < 0) | (kept[:-1] < 0)) + 1
        starts = np.concatenate([[0], breaks]).astype(np.int64) if kept.size else np.zeros(0, dtype=np.int64)
        counts = np.diff(np.append(starts, kept.size))
        runs = list(zip(kept[starts].tolist(), counts.tolist(), strict=True))
        return cls(kept, renumbered, np.flatnonzero(kept < 0), runs)

    @property
    def size(self) -> int:
        return int(self.kept.size)

    def listed(self, old: Sequence[T], new: Sequence[T]) -> list[T]:
        """A per-row list of the new copy: the kept rows' items, the new rows' from ``new``, in order."""
        out: list[T] = []
        taken = iter(new)
        for first, count in self.runs:
            if first < 0:
                out.append(next(taken))
            else:
                out.extend(old[first : first + count])
        return out

    def column(self, old: npt.NDArray[G], new: npt.ArrayLike, order: Literal["C", "F"] = "C") -> npt.NDArray[G]:
        """A per-row array of the new copy: the kept rows' values moved, the new rows' from ``new``; ``order``: the
        memory order of a matrix (``"F"``: a column at a time)."""
        new_values = np.asarray(new)
        dtype = np.result_type(old.dtype, new_values.dtype) if new_values.size else old.dtype
        out: npt.NDArray[G] = np.empty((self.size, *old.shape[1:]), dtype=dtype, order=order)
        at = 0
        for first, count in self.runs:  # slices: memcpy
            if first >= 0:
                out[at : at + count] = old[first : first + count]
            at += count
        out[self.added] = new_values
        return out


@dataclass(frozen=True)
class Pairs:
    """(key, row) pairs sorted by key and then row."""

    keys: npt.NDArray[np.int32]
    rows: npt.NDArray[np.int32]

    @classmethod
    def of(cls, keys: Rows, rows: Rows, size: int) -> tuple[Self, npt.NDArray[np.int64]]:
        """The pairs sorted, each distinct pair once, with how often each came (rows below ``size``)."""
        combined, counts = np.unique(keys * size + rows, return_counts=True)
        return cls((combined // max(size, 1)).astype(np.int32), (combined % max(size, 1)).astype(np.int32)), counts

    def spliced(self, moved: Renumbering, new: "Pairs") -> tuple["Pairs", npt.NDArray[np.bool_], Rows]:
        """These pairs in the new copy with ``new`` (sorted, on new rows) among them; also which old pairs stayed
        and where the new ones went, to move a column of values along (``np.insert(old[stay], at, values)``)."""
        rows = moved.renumbered[self.rows]
        stay = rows >= 0
        keys, rows = self.keys[stay], rows[stay]
        size = moved.size
        at = np.searchsorted(keys.astype(np.int64) * size + rows, new.keys.astype(np.int64) * size + new.rows)
        merged = Pairs(np.insert(keys, at, new.keys), np.insert(rows.astype(np.int32), at, new.rows))
        return merged, stay, at

    def without_unused(self, keys: int) -> tuple["Pairs", Rows]:
        """These pairs with the keys no pair holds dropped and the rest numbered again in order (the pairs stay
        sorted), and each old key's new one (-1 for a dropped key)."""
        held = np.bincount(self.keys, minlength=keys) > 0
        renumbered = np.where(held, np.cumsum(held) - 1, -1)
        return Pairs(renumbered[self.keys].astype(np.int32), self.rows), renumbered

    def unused(self, keys: int) -> bool:
        """Whether more than ``UNUSED_CODES_KEPT`` of the ``keys`` keys are held by no pair."""
        held = int(np.count_nonzero(np.bincount(self.keys, minlength=keys)))
        return keys - held > UNUSED_CODES_KEPT * keys

    def starts(self, keys: int) -> Rows:
        """Key k's pairs are ``starts[k]:starts[k + 1]`` (for ``keys`` keys)."""
        starts = np.zeros(keys + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.keys, minlength=keys), out=starts[1:])
        return starts


class Groups(Mapping[str, Rows]):
    """Label -> the rows carrying it, ascending (a category's tools, a tag's, a plugin's), so a request finds them
    by lookup, not by a pass over the catalog. Labels no row carries any more are absent."""

    def __init__(self, codes: dict[str, int], pairs: Pairs) -> None:
        self._codes, self._pairs = codes, pairs
        self._starts = pairs.starts(len(codes))
        self._rows = pairs.rows.astype(np.int64)
        self._rows.flags.writeable = False  # slices of it are handed out

    @classmethod
    def of(cls, labels: Sequence[Iterable[str]]) -> "Groups":
        """From each row's labels (none, one or several)."""
        return cls({}, Pairs(np.zeros(0, np.int32), np.zeros(0, np.int32))).spliced(
            Renumbering.of(np.full(len(labels), -1, dtype=np.int64), 0), labels
        )

    def spliced(self, moved: Renumbering, labels: Sequence[Iterable[str]]) -> "Groups":
        """The lookup of the new copy, ``labels`` being those of its new rows (``moved.added``) in order."""
        codes, keys, rows = self._codes, [], []
        for row, own in zip(moved.added.tolist(), labels, strict=True):
            for label in own:
                if label not in codes:
                    codes = dict(codes) if codes is self._codes else codes  # the old copy's stays as it is
                    codes[label] = len(codes)
                keys.append(codes[label])
                rows.append(row)
        new, _ = Pairs.of(np.array(keys, dtype=np.int64), np.array(rows, dtype=np.int64), moved.size)
        pairs, _, _ = self._pairs.spliced(moved, new)
        if pairs.unused(len(codes)):
            pairs, renumbered = pairs.without_unused(len(codes))
            codes = {label: int(renumbered[code]) for label, code in codes.items() if renumbered[code] >= 0}
        return Groups(codes, pairs)

    def __getitem__(self, label: str) -> Rows:
        code = self._codes[label]
        start, end = self._starts[code], self._starts[code + 1]
        if start == end:
            raise KeyError(label)
        return self._rows[start:end]

    def __iter__(self) -> Iterator[str]:
        return (label for label, code in self._codes.items() if self._starts[code + 1] > self._starts[code])

    def __len__(self) -> int:
        return int(np.count_nonzero(np.diff(self._starts)))
