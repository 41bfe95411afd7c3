"""Differential sync planning by content hash."""

from toolsel.contracts import ToolSpec
from toolsel.services.indexer.diff import StoredTool, changed_fields, plan_sync, split_by_tenant
from toolsel.services.indexer.hashing import content_hash


def _spec(name: str, description: str = "does things") -> ToolSpec:
    return ToolSpec(name=name, description=description)


def _stored(tool_id: int, spec: ToolSpec, deleted: bool = False, tenant_id: str = "*") -> StoredTool:
    return StoredTool(tool_id, content_hash(spec), deleted, spec.model_dump_json(), tenant_id)


def test_plan_classifies_insert_update_unchanged_delete() -> None:
    stored = {
        "same": _stored(1, _spec("same")),
        "edited": _stored(2, _spec("edited", "old text")),
        "dropped": _stored(3, _spec("dropped")),
        "gone_long_ago": _stored(4, _spec("gone_long_ago"), deleted=True),
        "dropped_too": _stored(5, _spec("dropped_too")),
    }
    new_edited = _spec("edited", "new text")
    fresh = _spec("fresh")
    plan = plan_sync(stored, [_spec("same"), new_edited, fresh])

    assert plan.insert == [(fresh, content_hash(fresh))]
    assert plan.update == [(2, new_edited, content_hash(new_edited), ["description"])]
    assert plan.unchanged == [1]
    assert plan.delete == [3, 5]


def test_soft_deleted_tool_declared_again_is_revived_as_update() -> None:
    spec = _spec("back")
    plan = plan_sync({"back": _stored(7, spec, deleted=True)}, [spec])
    assert plan.insert == []
    assert plan.unchanged == []
    assert plan.delete == []
    assert plan.update == [(7, spec, content_hash(spec), ["deleted_at"])]


def test_soft_deleted_tool_revived_with_changes_lists_the_changes() -> None:
    new = _spec("back", "reworded")
    plan = plan_sync({"back": _stored(7, _spec("back"), deleted=True)}, [new])
    assert plan.update == [(7, new, content_hash(new), ["description"])]


def test_empty_declaration_deletes_every_live_tool() -> None:
    stored = {"a": _stored(9, _spec("a")), "b": _stored(2, _spec("b")), "c": _stored(5, _spec("c"), deleted=True)}
    plan = plan_sync(stored, [])
    assert plan.delete == [2, 9]
    assert plan.insert == plan.update == plan.unchanged == []


def test_changed_fields_lists_differing_top_level_keys_sorted() -> None:
    old = {"name": "t", "tags": ["a"], "description": "x", "pinned": False, "gone": 1}
    new = {"name": "t", "tags": ["a", "b"], "description": "y", "pinned": False, "added": 2}
    assert changed_fields(old, new) == ["added", "description", "gone", "tags"]


def test_changed_fields_compares_nested_values_whole() -> None:
    old = {"parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}
    new = {"parameters": {"properties": {"a": {"type": "string"}}, "type": "object"}}
    assert changed_fields(old, new) == []
    assert changed_fields(old, {"parameters": {"type": "object", "properties": {}}}) == ["parameters"]


def test_changed_fields_of_real_specs() -> None:
    old = ToolSpec(name="t", description="d", tags=["a"]).model_dump(mode="json")
    new = ToolSpec(name="t", description="d", tags=["b"], pin_weight=3).model_dump(mode="json")
    assert changed_fields(old, new) == ["pin_weight", "tags"]


def test_a_tenant_sync_owns_its_tools_and_the_deleted_ones_never_another_tenants_live_ones() -> None:
    stored = {
        "shared": _stored(1, _spec("shared")),
        "mine": _stored(2, _spec("mine"), tenant_id="acme"),
        "theirs_gone": _stored(3, _spec("theirs_gone"), deleted=True, tenant_id="globex"),
        "theirs": _stored(4, _spec("theirs"), tenant_id="globex"),
    }
    owned, others = split_by_tenant(stored, "acme")
    assert sorted(owned) == ["mine", "theirs_gone"]
    assert others == {"shared": "*", "theirs": "globex"}
    assert plan_sync(owned, []).delete == [2]
