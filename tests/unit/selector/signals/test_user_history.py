"""User history: the asking user's own success rate with each tool, from the events the selector saw."""

from uuid import uuid4

from tests.unit.selector.factory import T, catalog, rerank_context
from toolsel.contracts import OutcomeEvent, SelectionEvent, SelectRequest, ToolCall
from toolsel.contracts.selection import SelectedTool
from toolsel.services.selector.history import UserHistory
from toolsel.services.selector.signals.user_history import USER_HISTORY
from toolsel.settings import Settings

CAT = catalog([T("a", "a", 0), T("b", "b", 1)])


def _history(tenant: str = "acme") -> UserHistory:
    history = UserHistory(Settings())
    for success in (True, False):
        selection = uuid4()
        history.record_selection(
            SelectionEvent(
                selection_id=selection,
                tenant_id=tenant,
                user_id="u1",
                query="q",
                tier="free",
                context_key="c",
                method="hybrid",
                tools=[SelectedTool(plugin_id="p", name=n, rank=i, score=1.0) for i, n in enumerate("ab")],
                candidate_count=2,
                latency_ms=0,
                tokens_selected=0,
                tokens_catalog=0,
            )
        )
        history.record_outcome(
            OutcomeEvent(selection_id=selection, calls=[ToolCall(plugin_id="p", name="b", success=success)])
        )
    return history


def test_is_the_users_success_rate_and_nothing_for_others() -> None:
    history = _history()
    mine = rerank_context(CAT, request=SelectRequest(query="q", tenant_id="acme", user_id="u1"), user_history=history)
    theirs = rerank_context(CAT, request=SelectRequest(query="q", tenant_id="acme", user_id="u2"), user_history=history)
    assert USER_HISTORY.scores(mine).tolist() == [0.0, 0.5]
    assert USER_HISTORY.scores(theirs).tolist() == [0.0, 0.0]


def test_a_user_of_the_same_name_in_another_tenant_is_another_user() -> None:
    other = SelectRequest(query="q", tenant_id="globex", user_id="u1")
    assert USER_HISTORY.scores(rerank_context(CAT, request=other, user_history=_history("acme"))).tolist() == [0.0, 0.0]
