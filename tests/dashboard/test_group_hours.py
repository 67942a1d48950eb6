"""A group's drill-down over more than a day reads lag_1h for its closed hours: minute rows written
by the lake's own writer, one file per hour, hours rolled up by the real spark_jobs.hourly writer,
charts compared with an independent DuckDB query over the minute files themselves.

Minute rows outside the range carry a huge lag, so a chart that counted a stored hour reaching
past the range's start or end would show it.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.queries import HOURLY_AFTER, Lake, Scope
from dashboard.queries import groups as group_queries
from lagwatch import lake as lakelib
from lagwatch.lake_hours import hour_file_stem, hour_of
from spark_jobs import hourly
from spark_jobs.lake_sink import write_batch
from tests.dashboard.conftest import CLUSTER as CLUSTER_KNOWN
from tests.dashboard.conftest import KnownLake

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")

UTC = dt.UTC
CLUSTER, GROUP = "c", "g"
#: The range: three days ending inside an open hour, starting mid-hour.
END = dt.datetime(2026, 3, 4, 10, 27, tzinfo=UTC)
START = END - dt.timedelta(days=3)
#: Minute rows from before the range to a few minutes past it.
FIRST = hour_of(START) - dt.timedelta(hours=1)
LAST = END + dt.timedelta(minutes=4)
PARTITIONS = (0, 1, 2)
OUTSIDE_LAG = 10**9
#: Committed offsets advance this much per minute: the consume rate is this / 60 per partition.
STEP = 10


def _lag_row(cluster: str, group: str, partition: int, start: dt.datetime) -> dict:
    m = int((start - FIRST).total_seconds() // 60)
    inside = START <= start < END
    lag = (m * 7919) % 1000 + partition if inside else OUTSIDE_LAG
    committed = 1000 + STEP * m
    return {
        "cluster": cluster,
        "group_id": group,
        "topic": "t",
        "partition": partition,
        "window_start": start,
        "window_end": start + dt.timedelta(minutes=1),
        "committed_offset": committed,
        "end_offset": committed + lag,
        "lag": lag,
        "lag_max": lag + m % 5,
        "consume_rate": STEP / 60 + partition,
        "produce_rate": 1.0 + m % 3,
        "time_lag_s": None if m % 7 == 0 else float((m * 31) % 600 if inside else OUTSIDE_LAG),
        "status": "WARN" if m % 11 == 0 else "OK",
    }


def _hour_rows(hour: dt.datetime) -> list[dict]:
    minutes = [hour + dt.timedelta(minutes=i) for i in range(60) if hour + dt.timedelta(minutes=i) < LAST]
    keys = [(CLUSTER, GROUP, p) for p in PARTITIONS] + [(CLUSTER, "other", 0), ("c2", GROUP, 0)]
    return [_lag_row(c, g, p, t) for c, g, p in keys for t in minutes]


def _build(root: Path) -> Path:
    """Minute rows one file per hour (batch id = the hour's index), a newest group_status row, and
    every closed hour rolled up by the real writer."""
    lake = root / "lake"
    lakelib.ensure_lake(lake)
    hour, index = FIRST, 1
    while hour < LAST:
        write_batch(lake, "lag_1m", lakelib.rows_to_arrow("lag_1m", _hour_rows(hour)), index, "q")
        hour, index = hour + dt.timedelta(hours=1), index + 1
    status = {"cluster": CLUSTER, "group_id": GROUP, "status": "OK", "total_lag": 1, "window_start": LAST}
    status["updated_at"] = LAST + dt.timedelta(seconds=45)
    write_batch(lake, "group_status", lakelib.rows_to_arrow("group_status", [status]), index, "q")
    written = hourly.roll_closed_hours(lake, 30.0, limit=1000)
    assert written["lag_1h"][0] == FIRST and written["lag_1h"][-1] == hour_of(END) - dt.timedelta(hours=1)
    return lake


def _lake(lake: Path) -> Lake:
    views = lake.parent / "lagwatch.duckdb"
    lakelib.write_views_file(lake, views)
    return Lake(lake, views)


@pytest.fixture(scope="module")
def rolled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("group-hours"))


def _minute_files(lake: Path) -> str:
    return (lakelib.table_dir(lake, "lag_1m") / "date=*" / "*.parquet").as_posix()


def _expected(lake: Path, scope: Scope, bucket_s: int, lag: str, group: str = GROUP) -> pd.DataFrame:
    """Per bucket and partition, from the minute files straight (every key written once)."""
    sql = f"""
    SELECT time_bucket(to_seconds({bucket_s}), window_start) AS time, topic || '/' || partition AS topic_partition,
           max({lag}) AS lag, max(time_lag_s) AS time_lag_s, avg(consume_rate) AS consume_rate
    FROM read_parquet('{_minute_files(lake)}', hive_partitioning = false)
    WHERE cluster = $cluster AND group_id = $group AND window_start >= $start AND window_start < $end
    GROUP BY ALL ORDER BY time, topic_partition"""
    params = {"cluster": scope.cluster, "group": group, "start": scope.start, "end": scope.end}
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    return _utc(con.execute(sql, params).df())


def _utc(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(time=pd.to_datetime(frame["time"], utc=True)).reset_index(drop=True)


def _chart(lake: Path, scope: Scope) -> pd.DataFrame:
    with_views = _lake(lake)
    with group_queries.session(with_views) as con:
        return _utc(group_queries.partitions_of(con, with_views, scope, GROUP))


def test_more_than_a_day_reads_hourly_rows() -> None:
    end = END
    assert not Scope(CLUSTER, end - HOURLY_AFTER, end).hourly
    assert Scope(CLUSTER, end - HOURLY_AFTER - dt.timedelta(minutes=1), end).hourly
    seven_days = Scope(CLUSTER, end - dt.timedelta(days=7), end)
    assert seven_days.bucket_s < 3600 and seven_days.hourly_bucket_s == 3600


def test_three_days_equal_the_minute_rows_with_the_closed_hours_read_from_lag_1h(rolled: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    shutil.copytree(rolled, lake)
    scope = Scope(CLUSTER, START, END)
    expected = _expected(lake, scope, scope.hourly_bucket_s, "lag_max")
    assert len(expected) == 73 * len(PARTITIONS)  # 10:27 to 10:27 three days on: 73 hours touched
    # The newest closed hour is left as if not written yet (read from its minutes); every hour
    # before it inside the range loses its minute files: only lag_1h can give those hours.
    newest_closed = hour_of(END) - dt.timedelta(hours=1)
    (
        lakelib.table_dir(lake, "lag_1h")
        / f"date={newest_closed:%Y-%m-%d}"
        / f"{hour_file_stem(newest_closed)}.parquet"
    ).unlink()
    hour, dropped = hour_of(START) + dt.timedelta(hours=1), 0
    while hour < newest_closed:
        for file in lakelib.table_dir(lake, "lag_1m").glob(f"date={hour:%Y-%m-%d}/*.parquet"):
            if pd.read_parquet(file, columns=["window_start"])["window_start"].min() == pd.Timestamp(hour):
                file.unlink()
                dropped += 1
        hour += dt.timedelta(hours=1)
    assert dropped == 70

    chart = _chart(lake, scope)
    pd.testing.assert_frame_equal(
        chart[["time", "topic_partition", "lag", "time_lag_s"]], expected.drop(columns="consume_rate")
    )
    assert chart["lag"].max() < OUTSIDE_LAG, "a stored hour reaching outside the range was counted"
    # Rates: each partition's committed offset advance between consecutive buckets' ends.
    middle = chart[(chart["time"] > chart["time"].min()) & (chart["time"] < chart["time"].max())]
    assert middle["consume_rate"].round(9).eq(round(STEP / 60, 9)).all()
    assert chart[chart["time"] == chart["time"].min()]["consume_rate"].isna().all()

    detail = group_queries.detail(_lake(lake), scope, GROUP)
    assert list(detail["partition_lag"].columns) == ["time", "topic_partition", "lag"]
    assert list(detail["history"].columns) == ["time", "lag", "time_lag_s", "consume_rate", "produce_rate"]
    assert detail["history"]["lag"].tolist() == expected.groupby("time")["lag"].sum().tolist()


def test_a_day_or_less_still_reads_minute_rows(rolled: Path) -> None:
    scope = Scope(CLUSTER, END - HOURLY_AFTER, END)
    expected = _expected(rolled, scope, scope.bucket_s, "lag")
    chart = _chart(rolled, scope)
    assert scope.bucket_s == 240 and len(expected) == 361 * len(PARTITIONS)
    pd.testing.assert_frame_equal(chart[["time", "topic_partition", "lag", "time_lag_s", "consume_rate"]], expected)


def test_the_groups_page_over_seven_days_draws_the_drill_down(known_lake: KnownLake) -> None:
    """The page as a reader opens it with the 7d range: the drill-down takes the hourly path and
    its lag chart holds the group's lag (the known lake has minute rows only: every hour is open
    or not written yet, so all of it comes from minute rows aggregated by hour)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["range"] = "7d"
    at.run()
    at.switch_page("views/groups.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text") for c in at.get("plotly_chart")]
    assert {"Offset lag (sum)", "Time lag (max)"} <= set(titles)
    assert not [i.value for i in at.info if "No lag rows for this group" in str(i.value)]
    # Every group's 7-day history equals its minute rows by hour, summed over its partitions.
    scope = Scope(CLUSTER_KNOWN, known_lake.now - dt.timedelta(days=7), known_lake.now)
    lake = Lake(known_lake.root / "lake", known_lake.root / "lagwatch.duckdb")
    groups = sorted({row["group_id"] for row in known_lake.rows["lag_1m"] if row["cluster"] == CLUSTER_KNOWN})
    assert len(groups) >= 3
    for group in groups:
        history = group_queries.detail(lake, scope, group)["history"]
        expected = _expected(known_lake.root / "lake", scope, scope.hourly_bucket_s, "lag_max", group)
        assert len(history) and history["lag"].tolist() == expected.groupby("time")["lag"].sum().tolist(), group
