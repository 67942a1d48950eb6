"""One Lagwatch for two real Kafka clusters, end to end: the issue's "done when".

One config with two `[[clusters]]` (the session broker, "home", which also carries the samples,
and a second broker on the oldest supported Kafka line when `KAFKA_HOME_COMPAT` is set), a
lagging group on each with known offsets. One `lagwatch collect --once` reads both; one Spark
pass over the samples topic (the job's available-now run, in the test session's Spark) writes
the lake. Then, each from its own reader of that real lake: DuckDB gives each group's exact lag
under its own cluster, the dashboard's All clusters page in chromium names both groups with
their cluster, and `/v3/kafka` of a running `lagwatch api` lists both clusters.

Both clusters set `lag = {warn_lag = 1}`, so each group is WARN (not OK) after one cycle: the All
clusters page lists the groups that are not OK, and the per-cluster threshold is exercised too.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.processes import run_lagwatch, start_lagwatch
from harness.two_clusters import Cluster, many_clusters_config
from lagwatch.config import load_config
from shell.broker import free_port
from spark_jobs import job
from tests.api.conftest import RunningApi, wait_answering
from tests.dashboard.conftest import KnownLake
from tests.dashboard.test_browser import CHROMIUM, CHROMIUM_ARGS, RENDER_TIMEOUT_MS, serving_dashboard
from tests.spark_jobs.lake_workload import lake_rows
from tests.test_many_clusters import WORKLOADS, lagging_group

pytestmark = pytest.mark.slow

#: Every cluster's thresholds ([[clusters]] `lag`): WARN above 1 message, no STOP within the test.
CLUSTER_LAG = {"warn_lag": 1, "stop_after_s": 3600}


def expected_lag(cluster: str) -> dict[int, int]:
    """Partition -> lag of `lagging_group` on that cluster (test_many_clusters' WORKLOADS)."""
    produced, committed = WORKLOADS[cluster]
    return {p: produced[p] - committed[p] for p in produced}


def not_ok_rows(url: str) -> list[str]:
    """The All clusters page's "Groups not OK" table, one "cluster | group | status | total lag …" per row."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/clusters")
            page.get_by_text("Groups not OK, every cluster").wait_for(timeout=RENDER_TIMEOUT_MS)
            grid = page.get_by_test_id("stDataFrame").last
            grid.locator("[role=gridcell]").first.wait_for(state="attached", timeout=RENDER_TIMEOUT_MS)
            page.wait_for_timeout(1000)  # let the grid draw every row
            assert page.get_by_test_id("stException").count() == 0, "exception box shown"
            return [
                " | ".join(t.strip() for t in row.locator("[role=gridcell]").all_text_contents())
                for row in grid.locator("[role=row]").all()
            ]
        finally:
            browser.close()


def test_two_clusters_from_collect_through_spark_to_lake_dashboard_and_api(
    two_clusters: tuple[Cluster, Cluster], spark: Any, tmp_path: Path, unique: Callable[[str], str]
) -> None:
    topic, samples_topic = unique("orders"), unique("samples")
    groups = {"home": unique("billing"), "second": unique("ledger")}
    for cluster in two_clusters:
        lagging_group(cluster, topic, groups[cluster.name])
    dashboard_port, api_port = free_port(), free_port()
    sections: dict[str, dict[str, Any]] = {
        "transport": {"samples_topic": samples_topic},
        "collect": {"coordinate": False, "groups_allow": [f"^({'|'.join(groups.values())})$"],
                    "topics_allow": [f"^{topic}$"], "timeout_s": 10},
        "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
        "spark": {"checkpoint_dir": str(tmp_path / "checkpoints")},
        "dashboard": {"port": dashboard_port},
        "api": {"port": api_port, "cache_s": 1},
    }  # fmt: skip
    config_path = many_clusters_config(
        tmp_path / "config.toml", list(two_clusters), sections, cluster_keys={"lag": CLUSTER_LAG}
    )

    collect = run_lagwatch(config_path, "collect", "--once")
    assert collect.returncode == 0, collect.stderr
    assert collect.stdout.startswith("collect: targets ok 2, failed 0,"), collect.stdout

    config = load_config(config_path)
    assert job.run(config, argparse.Namespace(available_now=True)) == 0

    lag = lake_rows(
        config,
        "SELECT cluster, group_id, partition, arg_max(lag, window_start) FROM lag_1m WHERE topic = ? GROUP BY ALL",
        [topic],
    )
    assert {(c, g, p): int(v) for c, g, p, v in lag} == {
        (name, groups[name], p): v for name in groups for p, v in expected_lag(name).items()
    }
    status = lake_rows(
        config,
        "SELECT cluster, group_id, arg_max(status, updated_at), arg_max(total_lag, updated_at) "
        "FROM group_status GROUP BY ALL",
    )
    assert {(c, g): (s, int(t)) for c, g, s, t in status} == {
        (name, groups[name]): ("WARN", sum(expected_lag(name).values())) for name in groups
    }

    api_log = tmp_path / "api.log"
    api = RunningApi(f"http://127.0.0.1:{api_port}", start_lagwatch(config_path, api_log, "api"), api_log)
    try:
        lake = KnownLake(tmp_path / "lake", config_path, dashboard_port, dt.datetime.now(dt.UTC))
        with serving_dashboard(lake, tmp_path / "dashboard.log") as url:
            rows = not_ok_rows(url)
        for name, group in groups.items():
            total = sum(expected_lag(name).values())
            assert any(row.startswith(f"{name} | {group} | WARN | {total} |") for row in rows), (name, rows)

        wait_answering(api)
        assert api.json("/v3/kafka")[1]["clusters"] == ["home", "second"]
        for name, group in groups.items():
            code, body = api.json(f"/v3/kafka/{name}/consumer/{group}/lag")
            assert code == 200 and body["status"]["status"] == "WARN", body
            lags = {p["partition"]: p["current_lag"] for p in body["status"]["partitions"]}
            assert lags == expected_lag(name), (name, body)
    finally:
        api.stop()
