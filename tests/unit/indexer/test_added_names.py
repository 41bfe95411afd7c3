"""The names a sync adds to its tenant's catalog, which alone are checked against the look-alikes it sees."""

from toolsel.contracts import ToolSpec
from toolsel.services.indexer.diff import StoredTool, added_names
from toolsel.services.indexer.hashing import content_hash


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description="does things")


def _stored(tool_id: int, name: str, deleted: bool = False) -> StoredTool:
    spec = _spec(name)
    return StoredTool(tool_id, content_hash(spec), deleted, spec.model_dump_json())


def test_new_and_revived_names_are_added_and_live_ones_kept() -> None:
    stored = {"live": _stored(1, "live"), "gone": _stored(2, "gone", deleted=True), "dropped": _stored(3, "dropped")}
    declared = [_spec("live"), _spec("gone"), _spec("fresh")]
    assert added_names(declared, stored) == {1: "gone", 2: "fresh"}


def test_a_sync_of_what_is_held_adds_nothing() -> None:
    assert added_names([_spec("live")], {"live": _stored(1, "live")}) == {}
