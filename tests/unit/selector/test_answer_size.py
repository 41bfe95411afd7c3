"""How many tools an answer holds: ``k: auto`` from the calibrated confidence, and a token budget never
exceeded (the stages directly, then through the whole selection)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.selector.factory import T, catalog
from tests.unit.selector.test_selector import EMBED, selector
from toolsel.contracts import SelectRequest
from toolsel.services.selector.pipeline import budget, count
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings


def test_auto_gives_every_candidate_that_may_be_the_one_needed() -> None:
    s = Settings(auto_k_min_confidence=0.03, auto_k_relative_confidence=0.05, auto_k_floor=1, auto_k_ceiling=10)
    assert count.auto(np.array([0.95, 0.04, 0.02]), s) == 1  # sure: the tail is under 5% of the best
    assert count.auto(np.array([0.3, 0.2, 0.1, 0.05, 0.04, 0.01]), s) == 5  # unsure: all that may be it
    assert count.auto(np.array([0.9, 0.8, 0.7, 0.01]), s) == 3  # three needs, each sure


def test_auto_stays_within_the_floor_and_the_ceiling() -> None:
    s = Settings(auto_k_floor=2, auto_k_ceiling=4)
    assert count.auto(np.array([0.99, 0.001]), s) == 2
    assert count.auto(np.full(20, 0.5), s) == 4
    assert count.auto(np.zeros(0), s) == 2


def test_a_budget_keeps_what_fits_in_order_and_skips_what_would_pass_it() -> None:
    assert budget.within(np.array([40, 70, 30, 20]), 100).tolist() == [True, False, True, True]
    assert budget.within(np.array([120, 10]), 100).tolist() == [False, True]
    assert not budget.within(np.array([5]), 4).any()


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=12),
    pins=st.integers(min_value=0, max_value=3),
    token_budget=st.integers(min_value=1, max_value=2000),
    k=st.one_of(st.integers(min_value=1, max_value=12), st.just("auto")),
)
def test_a_token_budget_is_never_exceeded(sizes: list[int], pins: int, token_budget: int, k: int | str) -> None:
    """Random catalogs (schema sizes, pins) and budgets: the reply's tokens never pass the budget, pins count
    against it, and what is left out is named and would not have fitted."""
    tools = [T(f"tool_{i}", f"weather tool number {i}", i % 5, pinned=i < pins) for i in range(len(sizes))]
    cat = catalog(tools)
    cat.schema_tokens[:] = sizes
    sel = Selector(Settings(exploration_slots=0, thompson_sampling=False), cat, EMBED)  # type: ignore[arg-type]
    reply, _ = sel.select(SelectRequest(query="weather tools", k=k, token_budget=token_budget))  # type: ignore[arg-type]
    assert reply.tokens.selected <= token_budget
    assert reply.tokens.selected == sum(sizes[int(t.name.split("_")[1])] for t in reply.tools)
    unbounded, _ = sel.select(SelectRequest(query="weather tools", k=k))  # type: ignore[arg-type]
    assert [t.key for t in unbounded.tools if t.key not in {r.key for r in reply.tools}] == reply.over_budget
    for key in reply.over_budget:
        assert reply.tokens.selected + sizes[int(key.split("_")[1])] > token_budget


def test_auto_gives_a_sure_query_fewer_tools_than_a_compound_one() -> None:
    sel = selector(auto_k_ceiling=5)
    one, _ = sel.select(SelectRequest(query="send an email to Bob", k="auto"))
    two, _ = sel.select(SelectRequest(query="send an email to Bob and check the weather", k="auto"))
    fixed, _ = sel.select(SelectRequest(query="send an email to Bob", k=5))
    assert next(t.name for t in one.tools if not t.pinned) == "send_email"
    assert len(one.tools) < len(two.tools) <= 5 + 1
    assert len(one.tools) < len(fixed.tools)
    assert {"send_email", "get_weather"} <= {t.name for t in two.tools}


def test_pins_count_against_the_budget_and_come_first() -> None:
    reply, _ = selector().select(SelectRequest(query="weather in Oslo", k=3, token_budget=20))
    assert [t.name for t in reply.tools] == ["search_tools", "get_weather"]
    assert reply.tokens.selected == 20
    unbounded, _ = selector().select(SelectRequest(query="weather in Oslo", k=3))
    assert reply.over_budget == [t.key for t in unbounded.tools[2:]]
    assert len(reply.over_budget) == 2
