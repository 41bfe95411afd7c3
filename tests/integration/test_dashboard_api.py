"""The HTTP admin API against the real stack: every route answers an operator, refuses anyone not signed in, and
refuses a session's write without its CSRF token (changing nothing); each reply is the admin request's, each
failure the same one-line typed error as the client's."""

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from fastapi.testclient import TestClient

from tests.integration.catalog import plugin_sync, tool, unique
from tests.integration.history import selection, store
from toolsel.client import SyncToolselClient
from toolsel.contracts import ReviewEvent, SelectionEvent, ToolReview, Verdict
from toolsel.dashboard.app import create_app
from toolsel.dashboard.auth import COOKIE, CSRF_HEADER
from toolsel.errors import InvalidRequest
from toolsel.settings import Settings
from toolsel.stack import Endpoints
from toolsel.store import create_pool, events

T = TypeVar("T")
TOKEN = "test-admin-token"
"""The admin token of the tests' stack (tests/conftest.py)."""
NO_SESSION = {"cookie": "none=1"}
"""Headers of a request without the session cookie (an explicit cookie header replaces the client's jar)."""


@pytest.fixture(scope="module")
def signed(endpoints: Endpoints) -> Iterator[TestClient]:
    """The dashboard's app on the tests' stack, its lifespan (NATS connections) running, and a client signed in
    through the sign-in form (its jar holds the session cookie). Its tests send many wrong tokens on purpose, so
    its throttle allows them (a test below checks the throttle)."""
    with TestClient(create_app(Settings(dashboard_sign_in_attempts=10_000), endpoints.nats_url, TOKEN)) as client:
        answer = client.post("/sign-in", data={"token": TOKEN}, follow_redirects=False)
        assert (answer.status_code, answer.headers["location"]) == (303, "/")
        assert COOKIE in client.cookies
        yield client


@pytest.fixture(scope="module")
def csrf(signed: TestClient) -> str:
    """The session's CSRF token, as a page's forms carry it."""
    page = signed.get("/rules", headers={"accept": "text/html"})
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


class Script:
    """A script's calls: the admin token as a bearer token, no session (so no CSRF token)."""

    def __init__(self, client: TestClient):
        self.client = client
        self.headers = {**NO_SESSION, "authorization": f"Bearer {TOKEN}"}

    def get(self, path: str, **options: Any) -> Any:
        return self.client.get(path, headers=self.headers, **options)

    def post(self, path: str, **options: Any) -> Any:
        return self.client.post(path, headers=self.headers, **options)

    def put(self, path: str, **options: Any) -> Any:
        return self.client.put(path, headers=self.headers, **options)

    def delete(self, path: str, **options: Any) -> Any:
        return self.client.delete(path, headers=self.headers, **options)


@pytest.fixture(scope="module")
def api(signed: TestClient) -> Script:
    return Script(signed)


def _refused(answer: Any, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["error"]["code"] == code
    message: str = body["error"]["message"]
    assert "\n" not in message
    return message


def _until(probe: Callable[[], T], done: Callable[[T], Any], timeout_s: float = 15) -> T:
    """Poll ``probe`` until ``done`` says its answer will do (what events change arrives later), or return the last."""
    deadline = time.monotonic() + timeout_s
    while not done(answer := probe()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


def _filled(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def test_every_route_refuses_anyone_not_signed_in_and_every_write_a_bad_csrf_token(signed: TestClient) -> None:
    document = signed.get("/api/openapi.json", headers={**NO_SESSION, "authorization": f"Bearer {TOKEN}"}).json()
    routes = [(path, method.upper()) for path, item in document["paths"].items() for method in item]
    assert len([path for path, _ in routes if path.startswith("/api/")]) >= 30
    writes = 0
    for template, method in routes:
        if template.startswith("/api/"):
            path = _filled(template)
            _refused(signed.request(method, path, headers=NO_SESSION), 401, "unauthorized")
            wrong = {**NO_SESSION, "authorization": "Bearer wrong"}
            _refused(signed.request(method, path, headers=wrong), 401, "unauthorized")
            if method != "GET":
                writes += 1
                for headers in ({}, {CSRF_HEADER: "forged"}):
                    assert "CSRF" in _refused(signed.request(method, path, json={}, headers=headers), 403, "forbidden")
    assert writes >= 15
    assert signed.get("/health", headers=NO_SESSION).json()["indexer"] == "ok"
    assert signed.get("/catalog", headers=NO_SESSION, follow_redirects=False).status_code == 401  # a script
    html = signed.get("/catalog", headers={**NO_SESSION, "accept": "text/html"}, follow_redirects=False)
    assert (html.status_code, html.headers["location"]) == (303, "/sign-in")
    _refused(signed.post("/sign-in", data={"token": "wrong"}, headers=NO_SESSION), 401, "unauthorized")


def test_wrong_tokens_hold_their_address_back_right_ones_included_until_the_window_passes(
    endpoints: Endpoints,
) -> None:
    settings = Settings(dashboard_sign_in_attempts=3, dashboard_sign_in_window_s=2.0)
    with TestClient(create_app(settings, endpoints.nats_url, TOKEN)) as client:
        _refused(client.post("/sign-in", data={"token": "wrong"}), 401, "unauthorized")
        _refused(client.get("/api/tools", headers={"authorization": "Bearer wrong"}), 401, "unauthorized")
        page = client.post("/sign-in", data={"token": "wrong"}, headers={"accept": "text/html"})
        assert page.status_code == 401
        started = time.monotonic()
        held = _refused(client.post("/sign-in", data={"token": TOKEN}, follow_redirects=False), 429, "rate_limited")
        assert "3 wrong admin tokens from this address" in held
        _refused(client.get("/api/tools", headers={"authorization": f"Bearer {TOKEN}"}), 429, "rate_limited")
        page = client.post("/sign-in", data={"token": TOKEN}, headers={"accept": "text/html"})
        assert (page.status_code, COOKIE in client.cookies) == (429, False)
        assert "wait" in page.text
        time.sleep(max(0.0, started + 2.1 - time.monotonic()))
        signed_in = client.post("/sign-in", data={"token": TOKEN}, follow_redirects=False)
        assert (signed_in.status_code, COOKIE in client.cookies) == (303, True)
        assert client.get("/api/tools", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_write_refused_for_its_csrf_token_changes_nothing(signed: TestClient, csrf: str) -> None:
    plugin = unique("csrf")
    sync = plugin_sync(plugin, unique("t"), [tool("get_weather")]).model_dump(mode="json")
    _refused(signed.post("/api/plugins/sync", json=sync, headers={CSRF_HEADER: "forged"}), 403, "forbidden")
    assert signed.get("/api/tools", params={"plugin_id": plugin}).json()["total"] == 0
    assert signed.post("/api/plugins/sync", json=sync, headers={CSRF_HEADER: csrf}).json()["inserted"] == 1
    assert signed.get("/api/tools", params={"plugin_id": plugin}).json()["total"] == 1


def test_tools_are_listed_paged_shown_updated_rolled_back_approved_and_deleted(api: Script) -> None:
    plugin, tenant = unique("api"), unique("t")
    names = ["get_weather", "send_email", "search_flights"]
    sync = plugin_sync(plugin, tenant, [tool(n) for n in names]).model_dump(mode="json")
    assert api.post("/api/plugins/sync", json=sync).json()["inserted"] == 3

    page = api.get("/api/tools", params={"search": plugin.upper(), "limit": 2, "offset": 1}).json()
    assert page["total"] == 3
    assert [t["name"] for t in page["tools"]] == ["search_flights", "send_email"]
    assert api.get("/api/tools", params={"search": f"{plugin}/send"}).json()["total"] == 1

    shown = api.get(f"/api/tools/{plugin}/get_weather").json()
    assert (shown["tool"]["name"], shown["versions"]) == ("get_weather", 1)
    changed = api.put(f"/api/tools/{plugin}/get_weather", json={"changes": {"description": "Weather, anywhere."}})
    assert changed.json()["changed_fields"] == ["description"]
    versions = api.get(f"/api/tools/{plugin}/get_weather/versions").json()["versions"]
    assert versions[-1]["diff"]["description"]["after"] == "Weather, anywhere."
    rolled = api.post(f"/api/tools/{plugin}/get_weather/rollback", json={"version": 1}).json()
    assert (rolled["restored_version"], rolled["new_version"]) == (1, 3)
    assert api.get(f"/api/tools/{plugin}/get_weather").json()["spec"]["description"] == tool("get_weather").description
    assert api.post(f"/api/tools/{plugin}/get_weather/approve").json()["tool"]["review_flag"] is False

    assert api.delete(f"/api/tools/{plugin}/search_flights").json()["tool"]["deleted_at"] is not None
    assert api.get("/api/tools", params={"plugin_id": plugin}).json()["total"] == 2
    mine = [p for p in api.get("/api/plugins").json()["plugins"] if p["plugin_id"] == plugin]
    assert [(p["tools"], p["deleted"], p["tenants"]) for p in mine] == [(2, 1, [tenant])]

    registered = {"plugin_id": plugin, "tenant_id": tenant, "tool": tool("translate_text").model_dump(mode="json")}
    assert api.post("/api/tools", json=registered).json()["version"] == 1
    _refused(api.post("/api/tools", json=registered), 409, "conflict")
    _refused(api.get(f"/api/tools/{plugin}/nothing_here"), 404, "not_found")
    message = _refused(
        api.post(f"/api/tools/{plugin}/get_weather/rollback", json={"version": 0}), 400, "invalid_request"
    )
    assert "greater than or equal to 1" in message
    smuggled = {**registered, "admin_token": "another"}
    _refused(api.post("/api/tools", json=smuggled), 400, "invalid_request")


def test_categories_page_mappings_and_rules(api: Script) -> None:
    plugin, tenant = unique("map"), unique("t")
    sync = plugin_sync(plugin, tenant, [tool("get_weather")]).model_dump(mode="json")
    sync["categories"].append({"name": "weather"})
    sync["tools"][0]["category"] = "weather"
    api.post("/api/plugins/sync", json=sync)
    tree = api.get("/api/categories", params={"plugin_id": plugin}).json()["categories"]
    assert sorted(c["name"] for c in tree) == ["general", "weather"]

    made = api.post("/api/page-mappings", json={"plugin_id": plugin, "category": "weather", "page_pattern": "/sky*"})
    assert made.json()["priority"] == 0
    mapped = api.get("/api/page-mappings", params={"plugin_id": plugin}).json()["mappings"]
    assert sorted((m["page_pattern"], m["category"]) for m in mapped) == [("/inbox*", "general"), ("/sky*", "weather")]
    found = api.get("/api/categories/for-page/sky/today").json()
    assert (found["page"], [(c["plugin_id"], c["category"]) for c in found["categories"]]) == (
        "/sky/today",
        [(plugin, "weather")],
    )
    gone = {"plugin_id": plugin, "category": "weather", "page_pattern": "/sky*"}
    assert api.delete("/api/page-mappings", params=gone).json()["category"] == "weather"
    assert len(api.get("/api/page-mappings", params={"plugin_id": plugin}).json()["mappings"]) == 1

    rule = {"tenant_id": tenant, "rule_type": "tier", "effect": "deny", "target_kind": "tool"}
    rule |= {"target": f"{plugin}/get_weather", "conditions": {"tier": "free"}}
    created = api.post("/api/visibility-rules", json=rule).json()
    listed = api.get("/api/visibility-rules", params={"tenant_id": tenant}).json()["rules"]
    assert [r["id"] for r in listed] == [created["id"]]
    assert api.put(f"/api/visibility-rules/{created['id']}", json={"active": False}).json()["active"] is False
    assert api.get("/api/visibility-rules", params={"tenant_id": tenant}).json()["rules"] == []
    assert api.delete(f"/api/visibility-rules/{created['id']}").json()["id"] == created["id"]
    _refused(api.delete(f"/api/visibility-rules/{created['id']}"), 404, "not_found")
    bad = {**rule, "conditions": {"org": "x"}}
    assert "tier rule" in _refused(api.post("/api/visibility-rules", json=bad), 400, "invalid_request")


def test_a_tenants_own_pins_are_shown_as_its_own_among_the_rules(
    api: Script, signed: TestClient, endpoints: Endpoints
) -> None:
    plugin, tenant = unique("own"), unique("t")
    api.post("/api/plugins/sync", json=plugin_sync(plugin, tenant, [tool("get_weather")]).model_dump(mode="json"))
    with SyncToolselClient(endpoints.nats_url) as client:
        pinned = client.pin_tool(plugin, "get_weather", tenant_id=tenant)
    assert [(c.name, c.pinned) for c in pinned.choices] == [("get_weather", True)]
    (rule,) = api.get("/api/visibility-rules", params={"tenant_id": tenant}).json()["rules"]
    assert (rule["origin"], rule["effect"], rule["target"]) == ("tenant", "pin", f"{plugin}/get_weather")
    page = signed.get("/rules", headers={"accept": "text/html"}).text
    row = next(line for line in page.splitlines() if f"<td>{rule['id']}</td>" in line)
    assert "its own choice" in row


def test_selection_quality_feedback_and_analytics(api: Script) -> None:
    plugin, tenant = unique("sel"), unique("t")
    sync = plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email")]).model_dump(mode="json")
    api.post("/api/plugins/sync", json=sync)
    before = api.get("/api/analytics/metrics").json()["selections"]
    asked = {"query": "what's the weather in Paris", "tenant_id": tenant, "k": 2}
    answer = _until(lambda: api.post("/api/test-selection", json=asked).json(), lambda a: a["tools"])  # reloaded
    assert answer["tools"][0]["name"] == "get_weather"
    assert {"similarity", "composite"} <= set(answer["tools"][0]["breakdown"])
    assert api.get("/api/analytics/metrics").json()["selections"] == before  # a dry run is not recorded
    for route in ("heatmap", "accuracy", "reviews", "drift"):
        assert api.get(f"/api/analytics/{route}").status_code == 200
    assert set(api.get("/api/analytics/reviews").json()) >= {"days", "turned"}
    _refused(api.get("/api/analytics/metrics", params={"since": "yesterday"}), 400, "invalid_request")
    assert api.post("/api/embeddings/recompute", json={"plugin_id": plugin}).json()["marked"] == 0

    quality = api.get("/api/quality", params={"plugin_id": plugin, "name": "get_weather"}).json()["tools"]
    assert [(q["name"], q["state"]) for q in quality] == [("get_weather", "healthy")]
    assert isinstance(api.get("/api/quality").json()["tools"], list)
    assert isinstance(api.get("/api/quarantine").json()["entries"], list)
    _refused(api.post(f"/api/quarantine/{plugin}/get_weather/release", json={}), 409, "conflict")

    rated = {"plugin_id": plugin, "name": "send_email", "tenant_id": tenant, "rating": 0.9, "comment": "quick"}
    assert api.post("/api/feedback", json=rated).json()["rating"] == 0.9

    def listed() -> list[str]:
        return [f["comment"] for f in api.get(f"/api/feedback/{plugin}/send_email").json()["feedback"]]

    assert _until(listed, bool) == ["quick"]  # the learner stores it from the stream
    _refused(api.post("/api/feedback", json={**rated, "rating": 2}), 400, "invalid_request")


def _stored(endpoints: Endpoints, selections: list[SelectionEvent]) -> None:
    async def stored() -> None:
        pool = await create_pool(endpoints.database_url)
        try:
            await store(pool, selections)
        finally:
            await pool.close()

    asyncio.run(stored())


def test_analytics_of_one_tenant_in_a_window_and_a_bounded_heatmap(
    endpoints: Endpoints, api: Script, signed: TestClient
) -> None:
    """``tenant_id`` was ignored (every tenant counted), and the Analytics tab read the whole history."""
    tenant = unique("dash")
    old = datetime.now(UTC) - timedelta(days=40)
    _stored(endpoints, [selection(tenant, at=old), selection(tenant, "/a"), selection(tenant, "/a"), selection(tenant)])
    assert api.get("/api/analytics/metrics", params={"tenant_id": tenant}).json()["selections"] == 4
    heat = api.get("/api/analytics/heatmap", params={"tenant_id": tenant, "tools": 1, "pages": 1}).json()
    assert (heat["cells"], heat["other_pages"]) == (
        [{"tool": "hist/tool_0", "page": "/a", "count": 2}],
        {"hist/tool_0": 2},
    )
    _refused(api.get("/api/analytics/metrics", params={"tenant": tenant}), 400, "invalid_request")
    _refused(api.get("/api/analytics/metrics", params={"tools": 2}), 400, "invalid_request")
    _refused(api.get("/api/analytics/heatmap", params={"tools": 0}), 400, "invalid_request")

    def shown(**window: str) -> str:
        page = signed.get("/analytics", params={"tenant_id": tenant, **window}, headers={"accept": "text/html"})
        assert page.status_code == 200, page.text
        found = re.search(r'id="selections">([\d,]+)<', page.text)
        assert found is not None
        return found.group(1)

    assert shown() == "3"  # the last 30 days (TOOLSEL_DASHBOARD_ANALYTICS_DAYS)
    assert shown(since=old.date().isoformat()) == "4"
    assert shown(since=old.date().isoformat(), until=old.date().isoformat()) == "1"


def test_a_failing_analytics_panel_leaves_the_others_shown(signed: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The heatmap's error replaced the whole tab: metrics, accuracy and drift included."""

    async def refused(*_: object) -> None:
        raise InvalidRequest.saying("the heatmap <b>refused</b>")

    monkeypatch.setattr(signed.app.state.client, "heatmap", refused)  # type: ignore[attr-defined]
    page = signed.get("/analytics", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "the heatmap &lt;b&gt;refused&lt;/b&gt;" in page.text
    for shown in ('id="selections"', "Retrieval accuracy", "Embedding drift"):
        assert shown in page.text


def test_the_openapi_document_lists_every_route_without_the_admin_token(api: Script) -> None:
    document = api.get("/api/openapi.json").json()
    assert {"/api/tools", "/api/tools/{plugin_id}/{name}/rollback", "/api/analytics/drift"} <= set(document["paths"])
    assert "admin_token" not in str(document["paths"])
    assert "admin_token" not in str(
        {name: schema for name, schema in document["components"]["schemas"].items() if "Register" in name}
    )


def test_the_reviews_tab_shows_one_tenants_reviews_of_the_last_days_unless_asked_for_others(
    endpoints: Endpoints, signed: TestClient
) -> None:
    """The Reviews tab read every tenant's whole review history on every visit."""
    tenant, old = unique("rev"), datetime.now(UTC) - timedelta(days=40)
    made = [selection(tenant, at=old), selection(tenant), selection(unique("rev"))]
    _stored(endpoints, made)

    async def reviewed() -> None:
        pool = await create_pool(endpoints.database_url)
        broken = [ToolReview(plugin_id="hist", name="tool_0", verdict=Verdict.BROKEN)]
        made_at = [old, None, None]
        try:
            async with pool.acquire() as conn:
                await events.insert_reviews(
                    conn,
                    [
                        ReviewEvent(selection_id=s.selection_id, reviews=broken, occurred_at=at or datetime.now(UTC))
                        for s, at in zip(made, made_at, strict=True)
                    ],
                )
        finally:
            await pool.close()

    asyncio.run(reviewed())

    def broken(**window: str) -> int:
        page = signed.get("/reviews", params=window, headers={"accept": "text/html"})
        assert page.status_code == 200, page.text
        found = re.search(r'<span class="kpi">(\d+)</span> broken', page.text)
        assert found is not None
        return int(found.group(1))

    assert broken(tenant_id=tenant) == 1  # the last 30 days (TOOLSEL_DASHBOARD_ANALYTICS_DAYS), this tenant's
    assert broken(tenant_id=tenant, since=old.date().isoformat()) == 2
    assert broken(since=old.date().isoformat()) >= 3
    assert signed.get("/reviews", params={"since": "never"}, headers={"accept": "text/html"}).status_code == 400
