import threading
from typing import Any

import polars as pl
import pytest

from toolsel.analytics import load
from toolsel.analytics.schema import empty


async def test_rows_are_decoded_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding 25k selections took 2 s on the learner's event loop: its health checks and events waited."""
    decoded_on: list[threading.Thread] = []

    async def rows(*_: Any) -> list[dict[str, Any]]:
        return []

    def frame(table: str, _: Any) -> pl.DataFrame:
        decoded_on.append(threading.current_thread())
        return empty(table)

    monkeypatch.setattr(load.readmodels, "event_rows", rows)
    monkeypatch.setattr(load, "frame", frame)
    assert (await load.from_store(None, "selections", tenant="acme")).is_empty()  # type: ignore[arg-type]
    assert len(decoded_on) == 1
    assert decoded_on[0] is not threading.current_thread()
