"""The tenant a message acts for is its sender's; a payload that names another is refused (forbidden)."""

import pytest

from toolsel.contracts import ErrorCode, subjects
from toolsel.contracts.identity import OPERATOR, tenant_scope
from toolsel.messaging import RequestError
from toolsel.tenancy import sender, tenant_for

ACME = tenant_scope("acme", "bot")


def test_an_identity_acts_for_its_tenant_named_or_not() -> None:
    assert tenant_for(ACME, "default", named=False) == "acme"
    assert tenant_for(ACME, "acme", named=True) == "acme"


@pytest.mark.parametrize("claimed", ["beta", "*", "default"])
def test_an_identity_naming_another_tenant_is_refused(claimed: str) -> None:
    with pytest.raises(RequestError) as refused:
        tenant_for(ACME, claimed, named=True)
    assert refused.value.detail.code is ErrorCode.FORBIDDEN
    assert refused.value.detail.field == "tenant_id"


def test_the_operator_acts_for_the_tenant_it_names() -> None:
    assert tenant_for(OPERATOR, "beta", named=True) == "beta"


def test_the_sender_is_read_from_the_subject() -> None:
    assert sender(subjects.scoped(subjects.SELECT_ROOT, ACME.token), subjects.SELECT_ROOT) == ACME
    assert sender(subjects.SELECT, subjects.SELECT_ROOT) == OPERATOR
    with pytest.raises(RequestError) as refused:
        sender(f"{subjects.SELECT_ROOT}.x", subjects.SELECT_ROOT)
    assert refused.value.detail.code is ErrorCode.FORBIDDEN
