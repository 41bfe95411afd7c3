"""A call's user and tier: its own where the identity leaves them open, the identity's where it fixes them."""

import pytest

from toolsel.mcp.toolshed import ToolshedError, per_call


def test_an_open_identity_takes_what_the_call_gives() -> None:
    assert per_call("tier", None, "pro") == "pro"
    assert per_call("tier", None, None) is None


def test_a_fixed_identity_keeps_its_own_and_refuses_another() -> None:
    assert per_call("user", "alice", None) == "alice"
    assert per_call("user", "alice", "alice") == "alice"
    with pytest.raises(ToolshedError, match="user 'bob': this identity is fixed to 'alice'"):
        per_call("user", "alice", "bob")
