"""A real headless chromium (Debian package) against a running `lagwatch dashboard`.

Every page loads without Streamlit's exception box, shows the key numbers of the known lake,
and leaves a screenshot in test-artifacts/. The dashboard runs as the operator runs it (the
CLI, a subprocess, the configured port) and is stopped with SIGTERM like `lagwatch up` does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.browser import CHROMIUM, CHROMIUM_ARGS, healthy
from tests.dashboard.conftest import KnownLake, broker_gauges, group_status

#: Imported by other browser tests; the launcher and its settings live in harness.browser.
__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "RENDER_TIMEOUT_MS", "serving_dashboard"]

READY_TIMEOUT_S = 90
RENDER_TIMEOUT_MS = 60_000


@contextlib.contextmanager
def serving_dashboard(lake: KnownLake, log_path: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """`lagwatch dashboard` over the lake's config until the block ends (then SIGTERM); yields its URL."""
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "shell.cli", "--config", str(lake.config_path), "dashboard"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{lake.port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not healthy(url):
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "dashboard did not answer /_stcore/health"
            time.sleep(0.25)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def _page(browser, url: str):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    return page


def _metric(page, label: str) -> str:  # type: ignore[no-untyped-def]
    tile = page.get_by_test_id("stMetric").filter(has_text=label).first
    tile.wait_for(timeout=RENDER_TIMEOUT_MS)
    return str(tile.get_by_test_id("stMetricValue").inner_text()).strip()


def _cell_texts(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Text of every table cell drawn on the page (the canvas grid mirrors its visible cells in a hidden table)."""
    cells = page.get_by_test_id("stDataFrame").locator("[role=gridcell]")
    cells.first.wait_for(state="attached", timeout=RENDER_TIMEOUT_MS)
    page.wait_for_timeout(1000)  # let every grid on the page draw
    return [text.strip() for text in cells.all_text_contents()]


def _check_and_shoot(page, name: str, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_timeout(1500)  # let charts finish drawing before the screenshot
    assert page.get_by_test_id("stException").count() == 0, f"{name}: exception box shown"
    assert page.get_by_test_id("stSidebar").get_by_text("Time range").count() == 1, f"{name}: no range picker"
    page.screenshot(path=str(artifacts / f"dashboard-{name}.png"), full_page=True)


@pytest.mark.slow
def test_every_page_in_chromium(known_lake: KnownLake, dashboard_url: str, artifacts_dir: Path, chromium: Any) -> None:
    status = group_status(known_lake)
    worst = status.sort_values("total_lag", ascending=False).iloc[0]
    page = _page(chromium, dashboard_url)
    urp = sum(broker_gauges(known_lake, "under_replicated_partitions").values())
    assert _metric(page, "Under-replicated partitions") == f"{urp:,.0f}"
    up = broker_gauges(known_lake, "up")
    assert _metric(page, "Brokers down") == str(sum(1 for v in up.values() if v < 1))
    cells = _cell_texts(page)
    numbers = {float(c.replace(",", "")) for c in cells if re.fullmatch(r"[\d,]+(\.\d+)?", c)}
    assert float(worst["total_lag"]) in numbers, cells  # the lag number is on screen, not cut off
    slowest = round(status["max_time_lag_s"].max())
    assert f"{slowest // 60}m {slowest % 60:02d}s" in cells, cells  # a time lag reads as a duration
    chips = {f"{k}={v}" for r in known_lake.rows["alert_events"] for k, v in json.loads(r["labels"]).items()}
    assert chips - {c for c in chips if c.startswith("alertname=")} <= set(cells), cells
    assert not [c for c in cells if c.startswith("{")], "alert labels shown as raw JSON"
    _check_and_shoot(page, "overview", artifacts_dir)

    page.goto(f"{dashboard_url}/brokers")
    elections = [r for r in known_lake.rows["metrics_1m"] if r["metric"] == "leader_elections_total"]
    assert _metric(page, "Leader elections in range") == f"{sum(r['rate_per_s'] * 60 for r in elections):,.0f}"
    _check_and_shoot(page, "brokers", artifacts_dir)

    page.goto(f"{dashboard_url}/topics")
    offsets = [r for r in known_lake.rows["metrics_1m"] if r["metric"] == "log_end_offset"]
    assert _metric(page, "Partitions") == str(len({(r["topic"], r["partition"]) for r in offsets}))
    _check_and_shoot(page, "topics", artifacts_dir)

    page.goto(f"{dashboard_url}/groups")
    assert _metric(page, "Total lag (messages)") == f"{worst['total_lag']:,.0f}"
    assert _metric(page, "Status") == worst["status"]
    newest_lag = [r for r in known_lake.rows["lag_1m"] if r["group_id"] == worst["group_id"]]
    newest_lag = [r for r in newest_lag if r["window_start"] == max(x["window_start"] for x in newest_lag)]
    assert all(r["eta_s"] is None and r["lag"] > 0 for r in newest_lag), "fixture: a group not catching up"
    assert _metric(page, "Time to catch up") == "not catching up"
    _check_and_shoot(page, "groups", artifacts_dir)

    page.goto(f"{dashboard_url}/alerts")
    firing = sum(1 for r in known_lake.rows["alert_events"] if r["event"] == "firing")
    assert _metric(page, "Firing events") == str(firing)
    assert not [c for c in _cell_texts(page) if c.startswith("{")], "alert labels shown as raw JSON"
    _check_and_shoot(page, "alerts", artifacts_dir)

    page.goto(f"{dashboard_url}/pipeline")
    assert _metric(page, "Dead letters") == str(len(known_lake.rows["dead_letters"]))
    _check_and_shoot(page, "pipeline", artifacts_dir)

    page.goto(f"{dashboard_url}/sql")
    page.get_by_role("textbox", name="SQL").fill("SELECT group_id FROM group_status")
    page.get_by_role("button", name="Run").click()
    rows = len(known_lake.rows["group_status"]) - 1  # one row was rewritten by a newer version
    page.get_by_text(f"{rows} row(s)").wait_for(timeout=RENDER_TIMEOUT_MS)
    _check_and_shoot(page, "sql", artifacts_dir)
    page.get_by_role("textbox", name="SQL").fill("COPY group_status TO '/tmp/x.csv'")
    page.get_by_role("button", name="Run").click()
    page.get_by_text("COPY is not allowed").wait_for(timeout=RENDER_TIMEOUT_MS)


@pytest.mark.slow
def test_range_picker_writes_the_url(known_lake: KnownLake, dashboard_url: str, chromium: Any) -> None:
    page = _page(chromium, f"{dashboard_url}/groups?range=1h")
    _metric(page, "Total lag (messages)")
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").filter(has_text="Time range").click()
    page.get_by_role("option", name="24h").click()
    page.wait_for_url("**range=24h**", timeout=RENDER_TIMEOUT_MS)
    assert "cluster=test-cluster" in page.url
    page.goto(page.url)  # the link alone reproduces the view
    _metric(page, "Total lag (messages)")
    caption = page.get_by_text("refreshes every").first.inner_text()
    start, end = (
        dt.datetime.strptime(part.strip()[-16:], "%Y-%m-%d %H:%M") for part in caption.split(" (")[0].split(" → ")
    )
    assert end - start == dt.timedelta(hours=24)


@pytest.mark.slow
def test_backtest_panel_replays_a_default_rule(
    known_lake: KnownLake, dashboard_url: str, artifacts_dir: Path, chromium: Any
) -> None:
    """ConsumerGroupUnhealthy over the last hour: a would-be alert per group of the picked cluster
    at STALL or worse in it (orders-app went OK → STALL two minutes ago; reports is STOP); broker 3
    is down in this lake, so the default inhibition (broker_down mutes lag) holds their
    notifications back, as the engine would: none sent, the change never notified."""
    from tests.dashboard.conftest import CLUSTER

    stalled = {
        r["group_id"]
        for r in known_lake.rows["group_status"]
        if r["cluster"] == CLUSTER and r["status"] in ("STALL", "STOP", "ERR", "LOSS")
    }
    assert "orders-app" in stalled

    page = _page(chromium, f"{dashboard_url}/alerts?range=1h")
    page.get_by_text('name = "UnderReplicatedPartitions"').first.wait_for(timeout=RENDER_TIMEOUT_MS)
    page.wait_for_timeout(1000)
    page.get_by_test_id("stSelectbox").filter(has_text="Rule").click()
    page.keyboard.type("ConsumerGroupUnhealthy")
    page.keyboard.press("Enter")
    page.get_by_text('name = "ConsumerGroupUnhealthy"').first.wait_for(timeout=RENDER_TIMEOUT_MS)
    page.get_by_role("button", name="Run backtest").click()
    assert _metric(page, "Would-be alerts") == str(len(stalled))
    assert _metric(page, "Notifications") == "0"
    page.get_by_test_id("stPlotlyChart").last.wait_for(timeout=RENDER_TIMEOUT_MS)
    cells = _cell_texts(page)
    assert "inhibited by BrokerDown" in cells, cells
    assert "never" in cells, "the OK → STALL change is listed, never notified"
    _check_and_shoot(page, "alerts-backtest", artifacts_dir)


@pytest.mark.slow
def test_all_clusters_page_and_the_cluster_picker_in_chromium(
    two_clusters: KnownLake, dashboard_url: str, artifacts_dir: Path, chromium: Any
) -> None:
    """The All clusters page names both clusters' not-OK groups with their cluster (prod-eu's
    orders-app ERR, test-cluster's orders-app STALL: one group id, two clusters), with no raw
    None; picking prod-eu scopes the groups page to prod-eu's groups."""
    from tests.dashboard.conftest import CLUSTER, SECOND_CLUSTER, SECOND_GROUPS

    home = group_status(two_clusters)
    page = _page(chromium, f"{dashboard_url}/clusters")
    page.get_by_text("Groups not OK, every cluster").wait_for(timeout=RENDER_TIMEOUT_MS)
    cells = _cell_texts(page)
    assert {CLUSTER, SECOND_CLUSTER} <= set(cells), cells
    rows = page.get_by_test_id("stDataFrame").last.locator("[role=row]")
    texts = [" | ".join(t.strip() for t in row.locator("[role=gridcell]").all_text_contents()) for row in rows.all()]
    for cluster, group, status in [
        *((CLUSTER, g, s) for g, s in zip(home["group_id"], home["status"], strict=True) if s != "OK"),
        *((SECOND_CLUSTER, g, s) for g, s in SECOND_GROUPS.items() if s != "OK"),
    ]:
        assert any(t.startswith(f"{cluster} | {group} | {status}") for t in texts), (cluster, group, texts)
    assert "None" not in cells and "nan" not in cells, cells
    _check_and_shoot(page, "all-clusters", artifacts_dir)

    page.goto(f"{dashboard_url}/groups")
    _metric(page, "Total lag (messages)")
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").filter(has_text="Cluster").click()
    page.get_by_role("option", name=SECOND_CLUSTER).click()
    page.wait_for_url(f"**cluster={SECOND_CLUSTER}**", timeout=RENDER_TIMEOUT_MS)
    page.get_by_text(f"Cluster {SECOND_CLUSTER}").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    page.wait_for_timeout(1500)
    groups_cells = set(_cell_texts(page))
    assert set(SECOND_GROUPS) <= groups_cells, groups_cells
    assert not set(home["group_id"]) - set(SECOND_GROUPS) & groups_cells, "test-cluster's groups shown"
    assert "ERR" in groups_cells
    _check_and_shoot(page, "groups-prod-eu", artifacts_dir)
