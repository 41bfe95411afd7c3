"""Version history: what each snapshot changed, and how a rollback restores a snapshot.

A snapshot is the whole tools row as JSON (without the vector) after the change it records, so version N is
the record as it stood at N. Diffs compare the declared spec field by field plus the record fields a person
cares about; columns derived from the spec (hashes, category, pins) would only repeat it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolsel.contracts import FieldChange, ToolVersion
from toolsel.store.registry import RESTORED_COLUMNS

RECORD_FIELDS = ("tenant_id", "plugin_version", "status", "review_flag", "approved", "deleted_at")
"""Fields of the row, beside the spec, that a diff shows."""


def record_fields(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's fields and the record fields of one snapshot, flat."""
    spec = snapshot.get("spec") or {}
    return {**spec, **{name: snapshot.get(name) for name in RECORD_FIELDS}}


def snapshot_diff(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, FieldChange]:
    """Field -> (before, after) for every field that differs; against nothing, every field set in ``after``."""
    old = record_fields(before) if before is not None else {}
    new = record_fields(after)
    return {
        name: FieldChange(before=old.get(name), after=new.get(name))
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    }


def version_history(rows: Sequence[Mapping[str, Any]]) -> list[ToolVersion]:
    """Rows (version, created_at, reason, changed_fields, content_hash, snapshot as dict) in version order."""
    history = []
    previous: Mapping[str, Any] | None = None
    for row in rows:
        history.append(
            ToolVersion(
                version=row["version"],
                created_at=row["created_at"],
                reason=row["reason"],
                changed_fields=list(row["changed_fields"]),
                content_hash=row["content_hash"].strip(),
                diff=snapshot_diff(previous, row["snapshot"]),
            )
        )
        previous = row["snapshot"]
    return history


@dataclass(frozen=True)
class RollbackPlan:
    restore: dict[str, Any]
    """Column -> value to write, for every column in RESTORED_COLUMNS."""
    changed_fields: list[str]
    """Empty when the record already matches the version: nothing to write."""
    reason: str


def plan_rollback(current: Mapping[str, Any], target: Mapping[str, Any], version: int) -> RollbackPlan:
    """What restoring snapshot ``version`` (``target``) over the ``current`` record writes."""
    return RollbackPlan(
        restore={name: target.get(name) for name in RESTORED_COLUMNS},
        changed_fields=list(snapshot_diff(current, target)),
        reason=f"rollback to v{version}",
    )
