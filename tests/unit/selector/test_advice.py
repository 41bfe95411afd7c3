"""The advice of a reply nothing fits (seed 002): reject and ask again while candidates are left, else create a
custom tool."""

from tests.unit.selector.test_selector import selector
from toolsel.contracts import SelectRequest
from toolsel.services.selector.pipeline.advice import CREATE_A_TOOL, NONE_OF_THESE, advice


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
