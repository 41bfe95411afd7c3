"""The memory release, on this process's own heap."""

import os
import sys
from pathlib import Path

import pytest

from toolsel.heap import release_freed_memory


def resident_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap, read from /proc")
def test_freed_blocks_below_a_live_one_go_back_to_the_system() -> None:
    blocks = [bytes(1000) + bytes([i % 256]) for i in range(100_000)]  # ~100 MB of malloc'd blocks
    live = bytes(2000) + b"after"  # keeps the heap's top in use, so free() alone cannot shrink it
    held = resident_mb()
    del blocks
    release_freed_memory()
    assert resident_mb() < held - 50
    assert live.endswith(b"after")
