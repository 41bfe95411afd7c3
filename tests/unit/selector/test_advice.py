"""The advice of a reply nothing fits (seed 002): reject and ask again while candidates are left, else create a
custom tool."""

from tests.unit.selector.test_selector import selector
from toolsel.contracts import SelectRequest
from toolsel.services.selector.pipeline.advice import CREATE_A_TOOL, NONE_OF_THESE, OVER_BUDGET, advice


def test_advice_follows_what_is_left() -> None:
    assert advice(no_match=False, remaining=0) == ""
    assert advice(no_match=True, remaining=3) == NONE_OF_THESE
    assert advice(no_match=True, remaining=0) == CREATE_A_TOOL
    assert "toolsel sync" in CREATE_A_TOOL


def test_a_reply_nothing_fits_advises_by_what_retrieval_left() -> None:
    sel = selector()
    some, _ = sel.select(SelectRequest(query="qwzx plorfk", k=2))
    every, _ = sel.select(SelectRequest(query="qwzx plorfk", k=20))
    fits, _ = sel.select(SelectRequest(query="send an email", k=2))
    assert some.no_match
    assert some.advice == NONE_OF_THESE
    assert every.no_match
    assert every.advice == CREATE_A_TOOL
    assert not fits.no_match
    assert fits.advice == ""


def test_a_fit_left_out_for_the_token_budget_is_no_no_match_and_the_advice_says_so() -> None:
    """The budget left out the one tool that fits: the reply said ``no_match`` and advised rejecting the answer
    and rephrasing, never a larger budget."""
    reply, _ = selector().select(SelectRequest(query="send an email", k=2, token_budget=5))
    assert reply.tools == []
    assert "p/send_email" in reply.over_budget
    assert not reply.no_match
    assert reply.advice == OVER_BUDGET
    assert advice(no_match=False, remaining=0, fits_over_budget=True) == OVER_BUDGET
    nothing, _ = selector().select(SelectRequest(query="qwzx plorfk", k=2, token_budget=5))
    assert nothing.no_match  # what the budget left out does not fit either
    assert nothing.advice == NONE_OF_THESE
