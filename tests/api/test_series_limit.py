"""`[api] max_series`: with ten times more partitions than the limit, /metrics exports at most the limit,
keeps the coarse series (per group) and drops the finest (per partition) first, and counts what it dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lagwatch import lake as lakelib
from tests.api.conftest import lag_row, write_lake
from tests.api.test_metrics import by, scrape

MAX_SERIES = 200
GROUPS = 10
PARTITIONS_PER_GROUP = 10 * MAX_SERIES // GROUPS


def test_ten_times_more_partitions_than_the_limit_export_at_most_the_limit(tmp_path: Path, start_api: Any) -> None:
    t = lakelib.utc_now().replace(second=0, microsecond=0)
    rows = [
        lag_row(t, f"group-{g:02d}", "events", p, 1000, g * 10 + p % 7, status="WARN" if g == 3 else "OK")
        for g in range(GROUPS)
        for p in range(PARTITIONS_PER_GROUP)
    ]
    lake = tmp_path / "lake"
    write_lake(lake, {"lag_1m": rows})
    assert len(rows) == 10 * MAX_SERIES

    text, samples = scrape(start_api(lake, max_series=MAX_SERIES))
    series = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(series) <= MAX_SERIES
    assert by(samples, "lagwatch_api_series_exported")[()] == len(series)
    assert len(by(samples, "burrow_kafka_consumer_lag_total", "consumer_group")) == GROUPS, "every group kept"
    assert len(by(samples, "kafka_consumergroup_group_sum_lag", "group")) == GROUPS
    kept = by(samples, "kafka_consumergroup_group_lag", "group", "partition")
    assert len(kept) < len(rows), "partition series were dropped"
    assert kept and {g for g, _ in kept} == {"group-03"}, "the worst group's partitions are kept first"
    dropped = by(samples, "lagwatch_api_series_dropped", "level")
    assert dropped[("partition",)] > 0 and dropped[("group",)] == 0
    assert by(samples, "lagwatch_api_series_dropped_total", "level")[("partition",)] >= dropped[("partition",)]
