"""A tenant's standing: the base (each tool's own tenant's evidence) with the tenant's own evidence of shared
tools in its place; another tenant's evidence never shows."""

from typing import Any

import numpy as np
import pytest

from tests.unit.selector.factory import AxisEmbedder, T, catalog
from toolsel.contracts import SelectRequest
from toolsel.services.selector.catalog import with_standing
from toolsel.services.selector.selector import Selector
from toolsel.services.selector.standing import evidence_by_tenant, performance, rating_lift
from toolsel.settings import Settings

ROWS = {"p/a": 0, "p/b": 1}


def evidence(key: str, tenant: str, **values: Any) -> dict[str, Any]:
    row = {"key": key, "tenant_id": tenant, "quarantined": False, "rating_sum": None, "rating_count": None}
    return row | {"calls": None, "failures": None, "latency_sum_ms": None, "latency_count": None} | values


def test_each_tenants_evidence_lands_on_its_catalog_rows_and_unknown_tools_are_left_out() -> None:
    rows = [
        evidence("p/b", "acme", quarantined=True, rating_sum=0.3, rating_count=3, calls=4, failures=4),
        evidence("p/a", "globex", calls=2),
        evidence("p/gone", "acme", calls=9),
    ]
    found = evidence_by_tenant(rows, ROWS, Settings())
    assert set(found) == {"acme", "globex"}
    acme = found["acme"]
    assert acme.rows.tolist() == [1]
    assert acme.quarantined.tolist() == [True]
    assert acme.rating.tolist() == [pytest.approx((0.3 + 0.5 * 2) / (3 + 2) / 0.5)]
    assert acme.calls.tolist() == [4.0]
    assert acme.performance.tolist() == [performance(4, 4, None, None, 1000.0)]
    assert found["globex"].rows.tolist() == [0]


def test_a_tenants_own_evidence_replaces_the_base_for_it_alone() -> None:
    cat = catalog([T("a", "a", 0), T("b", "b", 1), T("own", "o", 2, tenant="acme")])
    object.__setattr__(cat, "rating", np.array([0.9, 0.8, 0.7]))
    acme = evidence("p/b", "acme", quarantined=True, rating_sum=0.05, rating_count=1)
    object.__setattr__(cat, "evidence", evidence_by_tenant([acme], ROWS, Settings()))

    mine, theirs = cat.standing("acme"), cat.standing("globex")
    assert mine.visible.tolist() == [True, True, True]
    assert theirs.visible.tolist() == [True, True, False]
    assert (mine.quarantined.tolist(), mine.rating.tolist()) == ([False, True, False], [0.9, pytest.approx(0.7), 0.7])
    assert (theirs.quarantined.tolist(), theirs.rating.tolist()) == ([False, False, False], [0.9, 0.8, 0.7])
    assert cat.rating.tolist() == [0.9, 0.8, 0.7]  # the base itself is untouched
    assert cat.standing("acme") is mine  # kept for the next request


def test_a_shared_tool_quarantined_for_one_tenant_is_still_selected_for_another() -> None:
    cat = catalog([T("send_email", "send an email", 0), T("read_inbox", "email inbox", 1)])
    quarantined = evidence("p/send_email", "acme", quarantined=True, calls=18, failures=18)
    object.__setattr__(cat, "evidence", evidence_by_tenant([quarantined], {"p/send_email": 0}, Settings()))
    selector = Selector(Settings(exploration_slots=0), cat, AxisEmbedder({"email": 0}))  # type: ignore[arg-type]

    def names(tenant: str) -> list[str]:
        reply, _ = selector.select(SelectRequest(query="send an email", tenant_id=tenant, k=2))
        return [t.name for t in reply.tools]

    assert "send_email" not in names("acme")
    assert names("globex")[0] == "send_email"


def test_a_new_standing_keeps_the_catalogs_indexes_and_replaces_only_what_health_changes() -> None:
    cat = catalog([T("a", "a", 0, category="c"), T("b", "b", 1), T("own", "o", 2, tenant="acme")])
    indexes = (cat.rows, cat.category_rows, cat.filter_rows)
    related = cat.related(0)
    before = cat.standing("acme")
    base = [evidence("p/b", "*", quarantined=True, calls=5), evidence("p/gone", "*", calls=7)]
    own = [evidence("p/a", "acme", rating_sum=0.2, rating_count=1)]

    fresh = with_standing(cat, base, own, Settings())

    kept = (fresh.rows, fresh.category_rows, fresh.filter_rows)
    assert all(a is b for a, b in zip(kept, indexes, strict=True))  # built once, not again
    assert fresh.related(0) is related
    assert fresh.lexical is cat.lexical
    assert fresh.vectors is cat.vectors
    assert (fresh.quarantined.tolist(), fresh.calls.tolist()) == ([False, True, False], [0.0, 5.0, 0.0])
    assert fresh.standing("acme").rating.tolist() == [pytest.approx(0.8), 1.0, 1.0]
    assert fresh.standing("acme") is not before
    assert cat.quarantined.tolist() == [False, False, False]  # the copy in use is never changed


def test_a_rating_above_the_neutral_one_lifts_a_tool_and_one_below_lowers_it() -> None:
    prior, weight = Settings().rating_prior, Settings().rating_prior_weight
    assert rating_lift(None, None, prior, weight) == 1.0
    assert rating_lift(0.9, 1, prior, weight) > 1.0 > rating_lift(0.2, 1, prior, weight)
    assert rating_lift(0.5 * 4, 4, prior, weight) == pytest.approx(1.0)
