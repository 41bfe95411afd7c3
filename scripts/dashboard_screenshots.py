"""Screenshots of the dashboard's tabs, as they are on a running stack (docs/dashboard/ holds the ones taken on
the demo catalog), through Debian's headless Chromium driven by Playwright (nothing is downloaded).

    eval "$(toolsel env)"   # a running `toolsel up` with its dashboard, after `toolsel demo`
    python scripts/dashboard_screenshots.py docs/dashboard
"""

import argparse
import os
import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

PAGES = {
    "catalog": "/catalog?search=demo-",
    "tool": "/catalog/demo-travel-suite/TripTool",
    "plugins": "/plugins",
    "mappings": "/mappings?plugin_id=demo-travel-suite",
    "rules": "/rules",
    "quality": "/quality",
    "reviews": "/reviews",
    "analytics": "/analytics",
    "try": "/try?query=find+me+a+hotel+in+Lisbon&page=/travel&tenant_id=demo&k=5",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(base_url=os.environ["TOOLSEL_DASHBOARD_URL"], viewport={"width": 1280, "height": 800})
        page.goto("/sign-in")
        page.screenshot(path=options.out / "sign-in.png")
        page.fill("input[name=token]", os.environ["TOOLSEL_ADMIN_TOKEN"])
        page.click("button[type=submit]")
        for name, path in PAGES.items():
            page.goto(path)
            page.screenshot(path=options.out / f"{name}.png", full_page=True)
            print(f"{name}: {page.title()}")
        browser.close()


if __name__ == "__main__":
    main()
