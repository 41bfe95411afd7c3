"""Which syncs apply, by their dates: a sync applied again changes nothing, one made before the last applied is
refused, and one dated beyond the clock skew ahead of the indexer is refused, so that it cannot lock out the syncs
after it."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from toolsel.contracts import ErrorCode, PluginSync
from toolsel.contracts.registry import CATEGORIES_MAX, PAGE_MAPPINGS_MAX
from toolsel.messaging import RequestError
from toolsel.services.indexer.sync import refuse_overgrown, repeated
from toolsel.store.registry import AppliedSync

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SKEW = timedelta(minutes=5)


def _sync(at: datetime) -> PluginSync:
    return PluginSync(plugin_id="mail", plugin_version="1.0.0", tenant_id="acme", tools=[], occurred_at=at)


def _refused(sync: PluginSync, last: AppliedSync | None) -> tuple[ErrorCode, str | None]:
    with pytest.raises(RequestError) as refused:
        repeated(sync, last, NOW, SKEW)
    return refused.value.detail.code, refused.value.detail.field


def test_the_first_and_a_newer_sync_apply_and_the_same_one_again_changes_nothing() -> None:
    sync = _sync(NOW)
    assert repeated(sync, None, NOW, SKEW) is False
    assert repeated(sync, AppliedSync(uuid4(), NOW - timedelta(hours=1)), NOW, SKEW) is False
    assert repeated(sync, AppliedSync(sync.event_id, sync.occurred_at), NOW, SKEW) is True


def test_a_sync_made_before_the_last_applied_is_refused_as_a_revert() -> None:
    last = AppliedSync(uuid4(), NOW)
    assert _refused(_sync(NOW - timedelta(seconds=1)), last) == (ErrorCode.CONFLICT, "occurred_at")


def test_a_sync_dated_beyond_the_skew_is_refused_and_one_within_it_applies() -> None:
    assert _refused(_sync(NOW + SKEW + timedelta(seconds=1)), None) == (ErrorCode.INVALID_REQUEST, "occurred_at")
    assert repeated(_sync(NOW + SKEW), None, NOW, SKEW) is False


def test_a_last_sync_applied_from_the_future_orders_nothing() -> None:
    """Applied before the bound was kept, it would refuse every sync until its date, with no command to clear it."""
    stuck = AppliedSync(uuid4(), NOW + timedelta(days=365))
    assert repeated(_sync(NOW), stuck, NOW, SKEW) is False


def test_a_plugin_holds_no_more_categories_or_mappings_than_one_declaration_carries() -> None:
    """A sync into a plugin another tenant's tools use only adds: each with new names grew them for good."""
    refuse_overgrown("mail", CATEGORIES_MAX, PAGE_MAPPINGS_MAX)  # at the bound: a whole declaration's worth
    with pytest.raises(RequestError) as categories:
        refuse_overgrown("mail", CATEGORIES_MAX + 1, 0)
    assert (categories.value.detail.code, categories.value.detail.field) == (ErrorCode.INVALID_REQUEST, "categories")
    with pytest.raises(RequestError) as mappings:
        refuse_overgrown("mail", 0, PAGE_MAPPINGS_MAX + 1)
    assert mappings.value.detail.field == "page_mappings"
