"""The process heap of a long-running toolsel process: what start-up made kept out of the cyclic garbage
collector's sight, and freed pages given back to the system after a large structure was replaced."""

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable


def freeze_start_up_heap() -> None:
    """Take what start-up made (the modules, the model's session, the first catalog copy: over a hundred thousand
    containers, some holding ten thousand items) out of the cyclic collector's sight for good. A full collection
    walked all of it, 70 ms in a selector at 10,000 tools, holding the interpreter while requests waited. Frozen
    objects are still freed when nothing refers to them, as a replaced catalog copy is; only a reference cycle made
    before the call would stay, so garbage is collected first."""
    gc.collect()
    gc.freeze()


def release_freed_memory() -> None:
    """Give the heap's free pages back to the system after a large structure was replaced: glibc keeps them,
    so a process that swaps its catalog would otherwise stay at the peak of two copies."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc: its allocator returns memory by itself
        return None
