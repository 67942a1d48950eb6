"""The dashboard's page time in a real headless chromium (the Debian package, never a download).

A page counts as rendered when its key number tile is on screen and Streamlit says the page's
script has finished (`stApp`'s `data-test-script-state` is `notRunning`): every query of the
page has run and its output is drawn. Each measurement opens a fresh page, as a user opening
a bookmark does, so nothing is served from the previous page's session.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
PAGE_TIMEOUT_MS = 60_000
DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]'

#: page name -> (path, the label of a number tile the page always draws)
PAGES: dict[str, tuple[str, str]] = {
    "overview": ("/", "Under-replicated partitions"),
    "groups": ("/groups", "Total lag (messages)"),
    "topics": ("/topics", "Partitions"),
}


class PageTimer:
    """One chromium for the whole soak; `times()` measures every page of PAGES once."""

    def __init__(self, dashboard_url: str) -> None:
        self.url = dashboard_url
        self._playwright: Any = None
        self._browser: Any = None

    def __enter__(self) -> PageTimer:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._browser is not None:
            self._browser.close()
        if self._playwright is not None:
            self._playwright.stop()

    def page_ms(self, path: str, tile_label: str) -> float | None:
        """Milliseconds from navigation to the rendered page; None when it did not render in time."""
        page = self._browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            started = time.perf_counter()
            page.goto(f"{self.url}{path}")
            page.get_by_test_id("stMetric").filter(has_text=tile_label).first.wait_for(timeout=PAGE_TIMEOUT_MS)
            page.locator(DONE).wait_for(state="attached", timeout=PAGE_TIMEOUT_MS)
            return (time.perf_counter() - started) * 1000
        except Exception:  # a timeout: reported as a missing figure, the soak goes on
            return None
        finally:
            page.close()

    def times(self) -> dict[str, float | None]:
        return {name: self.page_ms(path, label) for name, (path, label) in PAGES.items()}
