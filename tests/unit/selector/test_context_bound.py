"""The bound on a tenant's bandit contexts (``contexts_per_tenant_max``): past it a selection on a page or tier its
tenant has not learnt under reads and is learnt under its intent's fallback, and the count it reads stays right
however the posteriors arrive (the whole read, the periodic merge, a broadcast)."""

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.selector.factory import AxisEmbedder, T, catalog
from toolsel.contracts import SelectRequest
from toolsel.services.selector.catalog import Learnt, build_posteriors, merge_posteriors
from toolsel.services.selector.selector import Selector
from toolsel.settings import Settings

TOOLS = [T("alpha_mail", "send an email", 0), T("beta_mail", "send an email", 0), T("get_weather", "weather", 2)]
EMBED = AxisEmbedder({"email": 0, "weather": 2})
FALLBACK = "*:*:p/alpha_mail"
"""The fallback of an email query's intent (its nearest tool, the first of the twins)."""


def selector(bound: int = 2, **settings: Any) -> Selector:
    fixed = Settings(contexts_per_tenant_max=bound, exploration_slots=0, thompson_sampling=False, **settings)
    return Selector(fixed, catalog(TOOLS), EMBED)


def key_of(sel: Selector, tenant_id: str = "acme", **request: Any) -> str:
    """The context an email query was read under; its event carries the same (the learner files it there)."""
    reply, event = sel.select(SelectRequest(query="email", k=2, tenant_id=tenant_id, **request))
    assert event.context_key == reply.context_key
    return reply.context_key


def at_the_bound(sel: Selector, tenant: str = "acme") -> None:
    """The tenant learnt email queries under two pages, as the learner's broadcasts teach them (not selected here:
    the hot-query cache would keep their candidates)."""
    for page in ("/inbox", "/compose"):
        sel.learn("p/alpha_mail", tenant, f"free:{page}:p/alpha_mail", 2.0, 1.0, None)
    assert sel.learnt.contexts[tenant] == 2


def row(tenant: str, context: str, key: str, alpha: float = 1.0) -> dict[str, Any]:
    """A row of ``store.posteriors``."""
    return {
        "tenant_id": tenant,
        "context_key": context,
        "key": key,
        "alpha": alpha,
        "beta": 1.0,
        "last_success_at": None,
    }


def counted(learnt: Learnt) -> dict[str, int]:
    """Each tenant's contexts, counted over the posteriors."""
    return dict(Counter(tenant for tenant, _ in learnt.posteriors))


def test_at_the_bound_a_new_page_or_tier_is_read_and_learnt_under_the_intents_fallback() -> None:
    sel = selector()
    at_the_bound(sel)
    assert key_of(sel, page="/p/qwertyuiopas") == FALLBACK
    assert key_of(sel, page="/p/asdfghjklzxc", tier="gold") == FALLBACK
    sel.learn("p/beta_mail", "acme", FALLBACK, 30.0, 1.0, None)  # what the learner made of it
    reply, _ = sel.select(SelectRequest(query="email", k=2, tenant_id="acme", page="/p/zxcvbnmasdfg"))
    assert (reply.context_key, reply.tools[0].name, reply.tools[0].breakdown.alpha) == (FALLBACK, "beta_mail", 30.0)
    assert sel.learnt.contexts["acme"] == 3  # one fallback per intent past the bound, however many pages


def test_at_the_bound_a_context_already_learnt_is_read_and_learnt_as_before() -> None:
    sel = selector()
    at_the_bound(sel)
    assert key_of(sel, page="/inbox") == "free:/inbox:p/alpha_mail"
    assert key_of(sel, page="/compose") == "free:/compose:p/alpha_mail"


def test_another_tenant_keeps_its_own_contexts() -> None:
    sel = selector()
    at_the_bound(sel)
    assert key_of(sel, "other", page="/p/qwertyuiopas") == "free:/p/qwertyuiopas:p/alpha_mail"


def test_a_global_scope_shares_no_tenants_fallback_through_the_hot_query_cache() -> None:
    """Tenants of a shared scope share the hot-query cache's candidates, which carry the context."""
    sel = selector(usage_sharing="global")
    at_the_bound(sel)
    assert key_of(sel, page="/p/qwertyuiopas") == FALLBACK
    assert key_of(sel, "other", page="/p/qwertyuiopas") == "free:/p/qwertyuiopas:p/alpha_mail"
    assert key_of(sel, page="/p/qwertyuiopas") == FALLBACK


def test_below_the_bound_or_without_one_a_new_page_makes_its_context() -> None:
    sel = selector(bound=3)
    at_the_bound(sel)
    assert key_of(sel, page="/p/qwertyuiopas") == "free:/p/qwertyuiopas:p/alpha_mail"
    unbounded = selector(bound=0)
    at_the_bound(unbounded)
    assert key_of(unbounded, page="/p/qwertyuiopas") == "free:/p/qwertyuiopas:p/alpha_mail"


def test_the_count_is_each_tenants_contexts_across_the_whole_read_and_the_merge() -> None:
    learnt = build_posteriors(
        [row("acme", "a", "p/x"), row("acme", "a", "p/y"), row("acme", "b", "p/x"), row("other", "a", "p/x")]
    )
    assert learnt.contexts == counted(learnt) == {"acme": 2, "other": 1}
    recent = build_posteriors([row("acme", "a", "p/x", alpha=5.0), row("acme", "c", "p/x"), row("new", "a", "p/x")])
    assert merge_posteriors(learnt, recent) == 6
    assert learnt.contexts == counted(learnt) == {"acme": 3, "other": 1, "new": 1}
    assert learnt.posteriors[("acme", "a")]["p/x"][0] == 5.0
    assert merge_posteriors(learnt, recent) == 6  # merged twice: nothing changes
    assert learnt.contexts == {"acme": 3, "other": 1, "new": 1}


def test_the_count_is_each_tenants_contexts_across_broadcasts() -> None:
    sel = selector()
    sel.learnt = build_posteriors([row("acme", "a", "p/x")])
    sel.learn("p/y", "acme", "a", 2.0, 1.0, None)  # a context it has: not another
    sel.learn("p/x", "acme", "a", 3.0, 1.0, None)
    sel.learn("p/x", "other", "b", 3.0, 1.0, None)
    assert sel.learnt.contexts == counted(sel.learnt) == {"acme": 1, "other": 1}
    sel.learn("p/x", "acme", "b", 3.0, 1.0, None)
    assert sel.learnt.contexts == counted(sel.learnt) == {"acme": 2, "other": 1}


def _read_whole(sel: Selector) -> None:
    sel.learnt = build_posteriors([row("acme", "a", "p/x"), row("acme", "b", "p/x"), row("acme", "b", "p/y")])


def _merged(sel: Selector) -> None:
    sel.learnt = build_posteriors([row("acme", "a", "p/x")])
    merge_posteriors(sel.learnt, build_posteriors([row("acme", "a", "p/y"), row("acme", "b", "p/x")]))


def _broadcast(sel: Selector) -> None:
    sel.learnt = build_posteriors([row("acme", "a", "p/x")])
    sel.learn("p/y", "acme", "a", 2.0, 1.0, None)
    sel.learn("p/x", "acme", "b", 2.0, 1.0, None)


@pytest.mark.parametrize("arrived", [_read_whole, _merged, _broadcast])
def test_a_tenant_reaches_the_bound_however_its_posteriors_arrive(arrived: Callable[[Selector], None]) -> None:
    sel = selector()
    arrived(sel)
    assert key_of(sel, page="/p/qwertyuiopas") == FALLBACK
    assert key_of(sel, "other", page="/p/qwertyuiopas") == "free:/p/qwertyuiopas:p/alpha_mail"
