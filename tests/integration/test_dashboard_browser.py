"""The dashboard in a real browser (Debian's headless Chromium, driven by Playwright; nothing is downloaded): a
``toolsel dashboard`` process on the tests' stack, one browser session through what an operator does — sign in,
find a tool, roll a version back, edit a page mapping and see a selection change, release a quarantined tool,
read the reviews and the analytics after real selections."""

import subprocess
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from playwright.async_api import Page, async_playwright, expect

from tests.integration.catalog import (
    CHROMIUM,
    cli_env,
    eventually,
    free_port,
    needs_chromium,
    plugin_sync,
    sync_and_wait,
    tool,
    unique,
)
from toolsel.client import ToolselClient
from toolsel.contracts import OutcomeEvent, QuarantineQuery, ReviewEvent, ToolCall, ToolReview, Verdict
from toolsel.stack import SERVICE_COMMAND, Endpoints

TOKEN = "test-admin-token"
FAILURES_TO_QUARANTINE = 18
"""Failed calls that take a tool through warning and degraded to quarantined with the tests' settings (as
test_learner_health)."""

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def dashboard(endpoints: Endpoints) -> Iterator[str]:
    """``toolsel dashboard`` on a free port of this machine, as the operator of the tests' stack; its URL."""
    port = free_port()
    env = {**cli_env(endpoints, TOKEN), "TOOLSEL_DASHBOARD_PORT": str(port)}
    process = subprocess.Popen([*SERVICE_COMMAND, "dashboard"], env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=2).json().get("dashboard") == "ok":
                break
        except httpx.HTTPError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else "the dashboard exited"
        assert time.monotonic() < deadline, "the dashboard did not answer within 60 s"
        time.sleep(0.2)
    yield url
    process.terminate()
    process.wait(15)


@pytest.fixture
async def page(dashboard: str) -> AsyncIterator[Page]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = await browser.new_page(base_url=dashboard)
        yield tab
        await browser.close()


async def _quarantine(client: ToolselClient, tenant: str, plugin: str, name: str) -> None:
    """Real selections offering the tool, each followed by a failed call of it, until the learner quarantines it."""
    for _ in range(FAILURES_TO_QUARANTINE):
        reply = await client.select(query="translate this sentence into Spanish", tenant_id=tenant, k=3)
        call = ToolCall(plugin_id=plugin, name=name, success=False, latency_ms=30, error="HTTP 500")
        await client.report([OutcomeEvent(selection_id=reply.selection_id, calls=[call])])

    async def quarantined() -> bool:
        entries = (await client.list_quarantine(QuarantineQuery())).entries
        return any((e.plugin_id, e.name, e.tenant_id) == (plugin, name, tenant) for e in entries)

    assert await eventually(quarantined, timeout_s=60), "the learner did not quarantine the failing tool"


async def _flash(page: Page) -> str:
    return " ".join(await page.locator(".flash").all_inner_texts())


async def test_an_operator_signs_in_rolls_back_maps_a_page_releases_a_tool_and_reads_the_analytics(
    page: Page, client: ToolselClient
) -> None:
    plugin, tenant = unique("dash"), unique("t")
    sync = plugin_sync(plugin, tenant, [tool("get_weather"), tool("send_email"), tool("translate_text")])
    sync = sync.model_validate(
        {
            **sync.model_dump(),
            "categories": [{"name": "general"}, {"name": "mail"}],
            "tools": [
                {**t.model_dump(), "category": "mail" if t.name == "send_email" else "general"} for t in sync.tools
            ],
            "page_mappings": [{"page_pattern": "/mail*", "category": "mail"}],
        }
    )
    await sync_and_wait(client, sync)
    await client.update_tool(plugin_id=plugin, name="send_email", changes={"description": "Mail someone, somehow."})
    await _quarantine(client, tenant, plugin, "translate_text")
    first = await client.select(query="what's the weather in Paris", tenant_id=tenant, k=3)
    await client.review(first.selection_id, [ToolReview(plugin_id=plugin, name="get_weather", verdict=Verdict.BROKEN)])
    await client.report([ReviewEvent(selection_id=first.selection_id, none_of_these=True)])

    # signing in: nothing is shown before it, a wrong token is refused in one line
    await page.goto("/catalog")
    assert page.url.endswith("/sign-in")
    await page.fill("input[name=token]", "wrong")
    await page.click("button[type=submit]")
    await expect(page.locator(".error")).to_contain_text("wrong admin token")
    await page.fill("input[name=token]", TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("h1")).to_contain_text("Catalog")

    # find a tool and roll it back
    await page.fill("input[name=search]", plugin)
    await page.click("text=Filter")
    await expect(page.locator("table.tools tbody tr")).to_have_count(3)
    await page.click(f"text={plugin}/send_email")
    await expect(page.locator("#spec")).to_contain_text("Mail someone, somehow.")
    await page.click("text=Roll back to v1")
    assert f"rolled {plugin}/send_email back to v1 as v3 (description)" in await _flash(page)
    await expect(page.locator("#spec")).to_contain_text(tool("send_email").description)

    # a page mapping edited in the matrix changes what a selection on that page offers
    weather_on_mail = f"/try?query=what%27s+the+weather+in+Paris&page=/mail/inbox&tenant_id={tenant}&k=3"
    await page.goto(weather_on_mail)
    assert "get_weather" not in await page.locator("table.answer").inner_text()
    await page.goto(f"/mappings?plugin_id={plugin}")
    await page.fill(f'input[name="{plugin}/general|/mail*"]', "5")
    await page.click("text=Save mappings")
    assert "page mappings: 1 changed" in await _flash(page)

    async def offered() -> bool:
        await page.goto(weather_on_mail)
        return f"{plugin}/get_weather" in await page.locator("table.answer").inner_text()

    assert await eventually(offered, timeout_s=20), "the mapping did not reach the selection"

    # release the quarantined tool
    await page.goto("/quality")
    await page.click(f"text=Release {plugin}/translate_text")
    assert f"released {plugin}/translate_text onto probation ({tenant})" in await _flash(page)
    await expect(page.locator("table.quarantine")).not_to_contain_text(f"{plugin}/translate_text")

    async def seen_released() -> bool:  # the learner's broadcast, as the dashboard's NATS subscriber saw it
        await page.goto("/quality")
        return f"{plugin}/translate_text ({tenant}) → probation" in await page.locator("ul.changes").inner_text()

    assert await eventually(seen_released, timeout_s=10), "the release's state change did not reach the dashboard"

    # reviews and analytics after the real selections above
    await page.goto("/reviews")
    await expect(page.locator("svg.chart")).to_be_visible()
    assert int(await page.locator(".kpis li", has_text="broken").locator(".kpi").inner_text()) >= 1
    await page.goto("/analytics")
    assert int((await page.locator("#selections").inner_text()).replace(",", "")) >= FAILURES_TO_QUARANTINE + 1
    await expect(page.locator("table.heatmap")).to_be_visible()
    await expect(page.locator("svg.chart").first).to_be_visible()

    # signed out, the pages are closed again
    await page.click("text=Sign out")
    await page.goto("/analytics")
    assert page.url.endswith("/sign-in")
