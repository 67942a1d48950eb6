"""`/metrics` exposes each group's rebalances, seconds spent rebalancing and rebalance storm
(group_status), and leaves them out for a row without them (written before the lake had the columns)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lagwatch import lake as lakelib
from tests.api.conftest import CLUSTER, lag_row, write_lake
from tests.api.test_metrics import by, scrape


def test_group_rebalances_and_rebalancing_seconds_are_exported_per_group(tmp_path: Path, start_api: Any) -> None:
    lake = tmp_path / "lake"
    t = lakelib.utc_now().replace(second=0, microsecond=0)
    base = {"cluster": CLUSTER, "status": "OK", "rule": "ok", "window_start": t, "updated_at": t}
    statuses = [
        {**base, "group_id": "stormy", "rebalances": 7, "rebalancing_s": 42.5, "storm_rebalances": 7},
        {**base, "group_id": "calm", "rebalances": 1, "rebalancing_s": 3.0, "storm_rebalances": 0},
        {**base, "group_id": "older-row"},
    ]
    lags = [lag_row(t, group, "orders", 0, 10, 1) for group in ("stormy", "calm", "older-row")]
    write_lake(lake, {"lag_1m": lags, "group_status": statuses})
    _, samples = scrape(start_api(lake))
    assert by(samples, "lagwatch_consumergroup_rebalances", "cluster", "group") == {
        (CLUSTER, "stormy"): 7,
        (CLUSTER, "calm"): 1,
    }
    assert by(samples, "lagwatch_consumergroup_rebalancing_seconds", "cluster", "group") == {
        (CLUSTER, "stormy"): 42.5,
        (CLUSTER, "calm"): 3.0,
    }
    assert by(samples, "lagwatch_consumergroup_storm_rebalances", "cluster", "group") == {
        (CLUSTER, "stormy"): 7,
        (CLUSTER, "calm"): 0,
    }
