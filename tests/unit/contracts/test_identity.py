"""Who sent a message, from the scope its subject carries: a tenant's identity or the operator."""

import pytest

from toolsel.contracts import subjects
from toolsel.contracts.identity import OPERATOR, Scope, parse_scope, scope_of_user, tenant_scope


def test_a_tenant_identity_round_trips_through_its_scope_token() -> None:
    scope = tenant_scope("acme", "bot-1")
    assert scope.token == "t.acme.bot-1"
    assert parse_scope(scope.token) == scope
    assert scope.user == "acme.bot-1"
    assert scope_of_user(scope.user) == scope
    assert scope.inbox_prefix == "_INBOX.t.acme.bot-1"


def test_the_operator_scope() -> None:
    assert parse_scope(subjects.OPERATOR_SCOPE) == OPERATOR
    assert OPERATOR.operator
    assert OPERATOR.token == "op"
    assert OPERATOR.inbox_prefix == "_INBOX"


@pytest.mark.parametrize("user", ["operator", "selector", "", None, "a.b.c", ".x", "x.", "a.*"])
def test_users_that_are_no_tenant_identity_send_as_the_operator(user: str | None) -> None:
    assert scope_of_user(user) == OPERATOR


@pytest.mark.parametrize("token", ["", "t", "t.acme", "t.acme.bot.x", "x.acme.bot", "t.*.bot", "t.acme.>", "OP"])
def test_a_token_that_names_no_sender_is_none(token: str) -> None:
    assert parse_scope(token) is None


@pytest.mark.parametrize(("tenant", "name"), [("a.b", "x"), ("a", "x.y"), ("*", "x"), ("a", ""), ("a", "-x")])
def test_names_that_are_not_one_subject_token_are_refused(tenant: str, name: str) -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        tenant_scope(tenant, name)


def test_an_identity_owns_only_its_own_selections_the_operator_every_one() -> None:
    mine, other = tenant_scope("a", "bot"), tenant_scope("b", "bot")
    assert mine.owns(mine.token)
    assert not mine.owns(other.token)
    assert not mine.owns(OPERATOR.token)
    assert OPERATOR.owns(mine.token)
    assert OPERATOR.owns(OPERATOR.token)
    assert Scope("a", "bot") == mine
