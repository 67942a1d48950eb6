"""The groups page in a real headless chromium over a lake of 250 groups: a page of 100 at a time,
worst first, the total, paging, search, the status and topic filters, and the drill-down.

The dashboard runs as the operator runs it (`lagwatch dashboard`, a subprocess); the lake is
tests/dashboard/fleet_lake.py's, whose FLEET gives every expected id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.fleet_lake import AUDITORS, FLEET, build_fleet_lake, worst_first
from tests.dashboard.test_browser import RENDER_TIMEOUT_MS, serving_dashboard

pytestmark = pytest.mark.slow


@pytest.fixture
def fleet_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    fleet = build_fleet_lake(tmp_path)
    monkeypatch.setenv("LAGWATCH_CONFIG", str(fleet.config_path))
    with serving_dashboard(fleet, tmp_path / "dashboard.log") as url:
        yield url


def _group_grid(page: Any) -> Any:
    """The groups table (the first grid; the drill-down's owners table comes after it)."""
    return page.get_by_test_id("stDataFrame").first


def _caption(page: Any, text: str) -> None:
    page.get_by_text(text, exact=True).wait_for(timeout=RENDER_TIMEOUT_MS)
    page.wait_for_timeout(1000)  # let the grid redraw with the page the caption names


def _row_count(page: Any) -> int:
    """Rows of the groups table, header excluded (the grid says how many it holds, drawn or not)."""
    grid = _group_grid(page).locator("[role=grid]").first
    grid.wait_for(state="attached", timeout=RENDER_TIMEOUT_MS)
    return int(grid.get_attribute("aria-rowcount")) - 1


def _shown_ids(page: Any) -> list[str]:
    """The group ids of the rows drawn, top first (the grid mirrors its visible rows in a hidden table)."""
    rows = _group_grid(page).locator("[role=row]")
    ids = [row.locator("[role=gridcell]").first.text_content() for row in rows.all()[1:]]
    return [str(i).strip() for i in ids if i]


def _pick(page: Any, label: str, option: str) -> None:
    page.get_by_test_id("stMultiSelect").filter(has_text=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")


def _clear(page: Any, label: str) -> None:
    page.get_by_test_id("stMultiSelect").filter(has_text=label).get_by_role("button", name="Clear all").click()


def _metric(page: Any, label: str) -> str:
    tile = page.get_by_test_id("stMetric").filter(has_text=label).first
    tile.wait_for(timeout=RENDER_TIMEOUT_MS)
    return str(tile.get_by_test_id("stMetricValue").inner_text()).strip()


def test_groups_page_pages_searches_and_filters_250_groups(fleet_url: str, artifacts_dir: Path, chromium: Any) -> None:
    expected = worst_first(FLEET)
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{fleet_url}/groups")
    _caption(page, f"groups 1–100 of {len(FLEET)}")
    assert _row_count(page) == 100
    stopped = [g.group_id for g in FLEET if g.status == "STOP"]
    shown = _shown_ids(page)
    assert len(shown) >= len(stopped) + 2, shown
    assert shown == expected[: len(shown)], "worst first"
    assert set(shown[: len(stopped)]) == set(stopped), "the STOP groups on top"
    page.screenshot(path=str(artifacts_dir / "dashboard-groups-fleet.png"), full_page=True)

    page.get_by_test_id("stNumberInput").filter(has_text="Page").locator("input").fill("3")
    page.keyboard.press("Enter")
    _caption(page, f"groups 201–{len(FLEET)} of {len(FLEET)}")
    assert _row_count(page) == len(FLEET) - 200
    shown = _shown_ids(page)
    assert shown and shown == expected[200 : 200 + len(shown)]

    search = page.get_by_test_id("stTextInput").filter(has_text="Search groups").locator("input")
    search.fill("BILLING-consumer-00")
    search.press("Enter")
    wanted = worst_first([g for g in FLEET if "billing-consumer-00" in g.group_id])
    _caption(page, f"groups 1–{len(wanted)} of {len(wanted)} matching ({len(FLEET)} in all)")
    assert _row_count(page) == len(wanted)
    assert _shown_ids(page) == wanted
    search.fill("")
    search.press("Enter")
    _caption(page, f"groups 1–100 of {len(FLEET)}")

    _pick(page, "Status", "STALL")
    stalled = worst_first([g for g in FLEET if g.status == "STALL"])
    _caption(page, f"groups 1–{len(stalled)} of {len(stalled)} matching ({len(FLEET)} in all)")
    assert _shown_ids(page) == stalled
    _clear(page, "Status")
    _caption(page, f"groups 1–100 of {len(FLEET)}")

    _pick(page, "Topic", "audit")
    auditors = worst_first([FLEET[i] for i in AUDITORS])
    _caption(page, f"groups 1–{len(auditors)} of {len(auditors)} matching ({len(FLEET)} in all)")
    assert _shown_ids(page) == auditors
    page.screenshot(path=str(artifacts_dir / "dashboard-groups-fleet-topic.png"), full_page=True)

    chosen = next(g for g in FLEET if g.group_id == auditors[-1])
    page.get_by_test_id("stSelectbox").filter(has_text="Group").click()
    page.get_by_role("option", name=chosen.group_id, exact=True).click()
    page.wait_for_url(f"**group={chosen.group_id}**", timeout=RENDER_TIMEOUT_MS)
    page.get_by_test_id("stMetric").filter(has_text="Total lag (messages)").filter(
        has_text=f"{chosen.total_lag:,}"
    ).wait_for(timeout=RENDER_TIMEOUT_MS)
    assert _metric(page, "Status") == chosen.status
    assert page.get_by_test_id("stException").count() == 0


def test_a_link_to_a_group_on_another_page_opens_its_drill_down(fleet_url: str, chromium: Any) -> None:
    last = next(g for g in FLEET if g.group_id == worst_first(FLEET)[-1])
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{fleet_url}/groups?group={last.group_id}")
    _caption(page, f"groups 1–100 of {len(FLEET)}")
    assert last.group_id not in _shown_ids(page)
    assert _metric(page, "Total lag (messages)") == f"{last.total_lag:,}"
    assert _metric(page, "Status") == last.status
    assert page.get_by_test_id("stException").count() == 0
