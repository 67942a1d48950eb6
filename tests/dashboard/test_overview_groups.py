"""The overview's groups on real Parquet files through the real views: counts per status and the
worst groups come from SQL over the groups page's index, and equal a direct count over the
newest group_status rows read straight from the files (not through the views)."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import duckdb
import pandas as pd
import pytest

from dashboard import ui
from dashboard.queries import Lake, Scope
from dashboard.queries import overview as overview_queries
from dashboard.queries.groups import SHOWN_WORST
from lagwatch import lake as lakelib
from lagwatch import vocabulary
from tests.dashboard.conftest import KnownLake
from tests.dashboard.fleet_lake import CLUSTER, FLEET, build_fleet_lake


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> KnownLake:
    return build_fleet_lake(tmp_path_factory.mktemp("overview-fleet"))


def _direct_newest(fleet: KnownLake, scope: Scope) -> pd.DataFrame:
    """Every group's newest status row of the last hour, read from the Parquet files themselves,
    sorted by group id (the order the old in-memory table had before the page sorted it)."""
    files = (lakelib.table_dir(fleet.root / "lake", "group_status") / "date=*" / "*.parquet").as_posix()
    sql = f"""
    SELECT group_id, status, total_lag, max_time_lag_s FROM read_parquet('{files}', hive_partitioning = false)
    WHERE cluster = $cluster AND updated_at >= $since AND updated_at < $end
    QUALIFY row_number() OVER (PARTITION BY group_id ORDER BY updated_at DESC, version DESC) = 1
    ORDER BY group_id"""
    params = {"cluster": CLUSTER, "since": scope.recent_start, "end": scope.end}
    return duckdb.connect().execute(sql, params).df()


def test_overview_counts_and_worst_groups_equal_a_direct_count(fleet: KnownLake) -> None:
    scope = Scope(CLUSTER, fleet.now - dt.timedelta(hours=1), fleet.now + dt.timedelta(minutes=1))
    data = overview_queries.load(Lake(fleet.root / "lake", fleet.root / "lagwatch.duckdb"), scope)
    newest = _direct_newest(fleet, scope)
    assert len(newest) == len(FLEET) == 250

    counts = data["group_counts"]
    expected_counts = newest.groupby("status").agg(groups=("group_id", "count"), total_lag=("total_lag", "sum"))
    severity = vocabulary.STATUS_SEVERITY
    expected_order = sorted(expected_counts.index, key=lambda status: -severity[status])
    assert counts["status"].tolist() == expected_order == ["STOP", "STALL", "WARN", "OK"]
    assert counts["groups"].tolist() == expected_counts.loc[expected_order, "groups"].tolist()
    assert counts["total_lag"].tolist() == expected_counts.loc[expected_order, "total_lag"].tolist()
    assert dict(zip(counts["status"], counts["groups"], strict=True)) == dict(Counter(g.status for g in FLEET))

    # The same order rules the page applied in pandas to every group, applied to the direct rows.
    by_time = ui.by_time_lag_worst_first(newest).head(SHOWN_WORST)
    by_lag = newest.sort_values("total_lag", ascending=False, kind="stable").head(SHOWN_WORST)
    assert data["worst_time_lag"]["group_id"].tolist() == by_time["group_id"].tolist()
    assert data["most_lag"]["group_id"].tolist() == by_lag["group_id"].tolist()
    assert data["most_lag"]["total_lag"].tolist() == sorted((g.total_lag for g in FLEET), reverse=True)[:SHOWN_WORST]
    # Whole rows (and rates) only for the listed groups: every shown column is filled in.
    for name in ("worst_time_lag", "most_lag"):
        shown = data[name]
        assert len(shown) == SHOWN_WORST
        assert shown[["status", "reason", "max_time_lag_method", "consume_rate"]].notna().all().all(), name
    assert "groups" not in data, "the overview no longer loads every group"
