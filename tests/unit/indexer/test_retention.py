"""The indexer's pass prunes what its settings bound, and only that: versions kept all are never touched."""

from typing import Any

import pytest

from toolsel.services.indexer import retention
from toolsel.settings import Settings


@pytest.mark.parametrize(("versions", "days", "prunes"), [(0, 0.0, False), (20, 0.0, True), (0, 90.0, True)])
def test_a_pass_runs_when_versions_or_sync_records_are_bounded(versions: int, days: float, prunes: bool) -> None:
    assert retention.prunes(Settings(tool_versions_kept=versions, history_retention_days=days)) is prunes


async def test_a_pass_keeps_the_newest_versions_and_drops_old_sync_records(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[Any, ...]] = []

    async def versions(pool: object, kept: int, batch: int) -> int:
        asked.append(("versions", kept, batch))
        return 3

    async def syncs(pool: object, days: float, batch: int) -> int:
        asked.append(("syncs", days, batch))
        return 1

    monkeypatch.setattr(retention.retention, "prune_versions", versions)
    monkeypatch.setattr(retention.retention, "prune_sync_records", syncs)
    all_versions = Settings(tool_versions_kept=0, history_retention_days=60.0, retention_batch_rows=7)
    assert await retention.prune(object(), all_versions) == {"sync records": 1}  # type: ignore[arg-type]
    for_good = Settings(tool_versions_kept=4, history_retention_days=0, retention_batch_rows=7)
    assert await retention.prune(object(), for_good) == {"tool versions": 3}  # type: ignore[arg-type]
    assert asked == [("syncs", 60.0, 7), ("versions", 4, 7)]
