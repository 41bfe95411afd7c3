"""The users' history a selector keeps: only what a selection offered counts, and what one tenant sends is bounded
and pushes out only its own."""

from uuid import UUID

from toolsel.contracts import OutcomeEvent, SelectionEvent, ToolCall
from toolsel.contracts.identity import OPERATOR, Scope
from toolsel.contracts.selection import SelectedTool
from toolsel.services.selector.history import FairShares, UserHistory
from toolsel.settings import Settings

ACME, VICTIM = Scope("acme", "bot"), Scope("victim", "bot")
ROWS = {"p/a": 0, "p/b": 1, "p/c": 2, "p/made_up": 3}


def selection(scope: Scope, user: str, *names: str) -> SelectionEvent:
    """A selection ``scope`` made for ``user`` that offered the tools ``names`` of plugin p."""
    return SelectionEvent(
        tenant_id=scope.tenant or "default",
        owner=scope.token,
        user_id=user,
        query="q",
        tier="free",
        context_key="c",
        method="hybrid",
        tools=[SelectedTool(plugin_id="p", name=n, rank=i, score=1.0) for i, n in enumerate(names)],
        candidate_count=len(names),
        latency_ms=0,
        tokens_selected=0,
        tokens_catalog=0,
    )


def outcome(selection_id: UUID, *names: str, success: bool = True) -> OutcomeEvent:
    return OutcomeEvent(
        selection_id=selection_id, calls=[ToolCall(plugin_id="p", name=n, success=success) for n in names]
    )


def used(history: UserHistory, scope: Scope, user: str, offered: tuple[str, ...], *called: str) -> None:
    """``user`` of ``scope``'s tenant is offered ``offered`` and calls ``called``, successfully."""
    event = selection(scope, user, *offered)
    history.record_selection(event)
    history.record_outcome(outcome(event.selection_id, *called), scope)


def rates(history: UserHistory, scope: Scope, user: str) -> list[float]:
    return history.scores(scope.tenant or "default", user, ROWS, len(ROWS)).tolist()


def test_an_outcome_counts_only_calls_to_the_tools_its_selection_offered_and_once() -> None:
    history = UserHistory(Settings())
    event = selection(ACME, "alice", "a", "b")
    history.record_selection(event)
    history.record_outcome(outcome(event.selection_id, "a", "made_up", "c"), ACME)
    assert rates(history, ACME, "alice") == [1.0, 0.0, 0.0, 0.0]
    history.record_outcome(outcome(event.selection_id, "b", success=False), ACME)  # the same selection again
    assert rates(history, ACME, "alice") == [1.0, 0.0, 0.0, 0.0]


def test_only_the_identity_that_selected_or_the_operator_is_counted() -> None:
    history = UserHistory(Settings())
    mine, theirs = selection(VICTIM, "alice", "a"), selection(VICTIM, "bob", "a")
    history.record_selection(mine)
    history.record_selection(theirs)
    history.record_outcome(outcome(mine.selection_id, "a"), Scope("victim", "other"))
    history.record_outcome(outcome(mine.selection_id, "a"), ACME)
    history.record_outcome(outcome(theirs.selection_id, "a"), OPERATOR)
    assert rates(history, VICTIM, "alice") == [0.0] * 4
    assert rates(history, VICTIM, "bob") == [1.0, 0.0, 0.0, 0.0]


def test_a_users_record_keeps_its_most_recently_called_tools() -> None:
    history = UserHistory(Settings(user_history_tools=2))
    for called in ("a", "b", "a", "c"):
        used(history, ACME, "alice", ("a", "b", "c"), called)
    assert rates(history, ACME, "alice") == [1.0, 0.0, 1.0, 0.0]  # b, called least recently, is forgotten


def test_one_tenants_flood_of_users_and_selections_pushes_out_only_its_own() -> None:
    history = UserHistory(Settings(user_history_users=10, user_history_selections=10))
    used(history, VICTIM, "alice", ("a",), "a")
    pending = selection(VICTIM, "bob", "b")  # its outcome comes after the flood
    history.record_selection(pending)
    for i in range(100):
        used(history, ACME, f"u{i}", ("a",), "a")
        history.record_selection(selection(ACME, "x", "a"))
    history.record_outcome(outcome(pending.selection_id, "b"), VICTIM)
    assert rates(history, VICTIM, "alice") == [1.0, 0.0, 0.0, 0.0]
    assert rates(history, VICTIM, "bob") == [0.0, 1.0, 0.0, 0.0]
    assert rates(history, ACME, "u99") == [1.0, 0.0, 0.0, 0.0]
    assert rates(history, ACME, "u0") == [0.0] * 4  # acme's oldest made room


def test_shares_go_to_an_equal_split_taking_from_the_tenant_holding_most() -> None:
    shares: FairShares[int, str] = FairShares(4)
    for i in range(4):
        shares.put("big", i, "v")
    shares.put("small", 0, "v")
    shares.put("small", 1, "v")
    assert [shares.get("big", i) for i in range(4)] == [None, None, "v", "v"]  # its least recent went
    assert [shares.get("small", i) for i in range(2)] == ["v", "v"]
    assert shares.tenant_of(1) == "small"
    assert shares.tenant_of(1, among=["big"]) is None
