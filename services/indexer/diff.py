"""Differential sync: compare a plugin's declared tools with what the registry holds, by content hash."""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from toolsel.contracts import SHARED_TENANT, ToolSpec
from toolsel.services.indexer.hashing import content_hash


@dataclass(frozen=True)
class StoredTool:
    id: int
    content_hash: str
    deleted: bool
    spec_json: str
    """The stored spec as JSON text: a sync compares hashes, and parses only the specs of the tools it updates."""
    tenant_id: str = SHARED_TENANT

    @cached_property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = json.loads(self.spec_json)
        return spec


@dataclass
class SyncPlan:
    insert: list[tuple[ToolSpec, str]] = field(default_factory=list)
    update: list[tuple[int, ToolSpec, str, list[str]]] = field(default_factory=list)
    """(tool id, new spec, new hash, changed fields)."""
    unchanged: list[int] = field(default_factory=list)
    delete: list[int] = field(default_factory=list)


def changed_fields(old: dict[str, object], new: dict[str, object]) -> list[str]:
    """Top-level fields whose values differ, sorted."""
    return sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))


def split_by_tenant(stored: dict[str, StoredTool], tenant_id: str) -> tuple[dict[str, StoredTool], dict[str, str]]:
    """The tools a sync for ``tenant_id`` manages (that tenant's, and deleted ones it may revive) and the live
    tools of the plugin's other tenants (name -> tenant), which it neither changes nor removes."""
    owned = {name: t for name, t in stored.items() if t.deleted or t.tenant_id == tenant_id}
    others = {name: t.tenant_id for name, t in stored.items() if name not in owned}
    return owned, others


def added_names(declared: list[ToolSpec], stored: Mapping[str, StoredTool]) -> dict[int, str]:
    """The declared names (by position) that the sync adds to its tenant's catalog: new, or revived. A name it
    holds live already stays as it is, whatever was registered since."""
    held = {name for name, t in stored.items() if not t.deleted}
    return {i: spec.name for i, spec in enumerate(declared) if spec.name not in held}


def plan_sync(stored: dict[str, StoredTool], declared: list[ToolSpec]) -> SyncPlan:
    """What to insert, update, skip and soft-delete. A soft-deleted tool declared again is revived."""
    plan = SyncPlan()
    for spec in declared:
        digest = content_hash(spec)
        current = stored.get(spec.name)
        if current is None:
            plan.insert.append((spec, digest))
        elif current.content_hash == digest and not current.deleted:
            plan.unchanged.append(current.id)
        else:
            fields = changed_fields(current.spec, spec.model_dump(mode="json"))
            plan.update.append((current.id, spec, digest, fields or ["deleted_at"]))
    names = {spec.name for spec in declared}
    plan.delete = sorted(t.id for name, t in stored.items() if name not in names and not t.deleted)
    return plan
