"""What the demo says it left behind: only the quarantines of its own run, of its own tenant."""

from datetime import UTC, datetime, timedelta

from toolsel.cli.demo import DEMO_TENANT, demo_catalog, quarantined_since
from toolsel.contracts import QuarantineEntry

STARTED = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _entry(name: str, since: datetime, tenant: str = DEMO_TENANT, plugin: str = "demo-travel-suite") -> QuarantineEntry:
    return QuarantineEntry(
        plugin_id=plugin,
        name=name,
        tenant_id=tenant,
        reason="5 degraded calls",
        since=since,
        released_at=None,
        released_by=None,
        state="quarantined",
    )


def test_a_quarantine_left_by_an_earlier_run_or_of_another_tenant_or_plugin_is_not_reported() -> None:
    entries = [
        _entry("TripTool", STARTED - timedelta(minutes=5)),
        _entry("HotelTool", STARTED + timedelta(seconds=30)),
        _entry("HotelTool", STARTED + timedelta(seconds=30), tenant="acme"),
        _entry("send_email", STARTED + timedelta(seconds=30), plugin="mail"),
    ]
    assert quarantined_since(entries, STARTED) == ["demo-travel-suite/HotelTool for demo (5 degraded calls)"]


def test_the_demo_catalog_belongs_to_the_demo_tenant_alone() -> None:
    assert {p.tenant_id for p in demo_catalog()} == {DEMO_TENANT}
