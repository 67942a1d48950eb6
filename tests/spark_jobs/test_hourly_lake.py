"""The hourly tables from a real stream: two and a half hours of collector samples (a steady group,
one that stops committing, one whose offset goes back) through the job's rollups operator on
local Spark, written to the lake by the job's own writer, then rolled up by spark_jobs.hourly.

Every hourly row must equal what an independent DuckDB query computes from the raw minute files
(its own newest-version dedupe, its own worst-status ranking, the newest minute row by its own
window), for every group and partition; the open hour is not written, and a rerun writes the
same files with the same rows.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest

from lagwatch.config import LagConfig
from lagwatch.vocabulary import STATUS_ORDER
from spark_jobs import hourly
from tests.spark_jobs.conftest import parsed_sample, rollups_plan, run_query, write_batches

UTC = dt.UTC
FIRST = dt.datetime(2026, 2, 28, 22, 35, tzinfo=UTC)
CYCLE_S = 30
CYCLES = 300  # 22:35:00 .. 01:04:30
#: Cycles per micro-batch: 4.5 minutes, so every other batch ends mid-minute and that minute's
#: lag_1m rows are written again (a higher version) by the next batch.
BATCH_CYCLES = 9
CLOSED = [dt.datetime(2026, 2, 28, 22, tzinfo=UTC), dt.datetime(2026, 2, 28, 23, tzinfo=UTC)]
CLOSED.append(dt.datetime(2026, 3, 1, 0, tzinfo=UTC))
OPEN_HOUR = dt.datetime(2026, 3, 1, 1, tzinfo=UTC)
STOPPED = range(70, 110)  # 23:10 .. 23:29:30: g-stop's committed offset stands still
REWOUND_AT = 210  # 00:20: g-rewind's committed offset goes back 2,000 records
TABLES = ("lag_1m", "group_status")

pytestmark = pytest.mark.slow  # a minute of Spark micro-batches


def _offsets(cycle: int, group: str, partition: int) -> tuple[int, int]:
    """(committed offset, log end) of a group-partition at a cycle: 10 records/s produced."""
    end = 1_000 + 10 * CYCLE_S * cycle + partition
    committed = end - (40 + 15 * (cycle % 4))
    if group == "g-stop" and cycle in STOPPED:
        committed = _offsets(STOPPED.start - 1, group, partition)[0]
    if group == "g-rewind" and cycle >= REWOUND_AT:
        committed -= 2_000
    return committed, end


def _samples(cycle: int) -> list[dict]:
    ts_ms = int((FIRST + dt.timedelta(seconds=CYCLE_S * cycle)).timestamp() * 1000)
    rows = []
    for group, partitions in (("g-steady", (0, 1)), ("g-stop", (0,)), ("g-rewind", (0,))):
        for partition in partitions:
            committed, end = _offsets(cycle, group, partition)
            labels = {"source": "admin", "group_id": group, "topic": "t", "partition": partition}
            rows.append(parsed_sample(ts_ms, "committed_offset", "gauge", committed, **labels))
            rows.append(parsed_sample(ts_ms, "consumer_lag", "gauge", end - committed, **labels))
    return rows


def _roll_up_into_lake(spark: Any, root: Path) -> Path:
    """The job's rollups operator (30 s watermark) over the cycles, written by the job's LakeWriter."""
    from spark_jobs.lake_sink import LakeWriter
    from spark_jobs.rollups import decode_table

    batches = [
        [row for cycle in range(first, min(first + BATCH_CYCLES, CYCLES)) for row in _samples(cycle)]
        for first in range(0, CYCLES, BATCH_CYCLES)
    ]
    source = write_batches(root / "samples", batches)
    lake = root / "lake"
    writer = LakeWriter(lake, "rollups", {t: partial(decode_table, table=t) for t in TABLES})
    run_query(spark, source, rollups_plan(LagConfig(window_s=300)), root / "checkpoint", writer)
    return lake


@pytest.fixture(scope="module")
def lake(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = _roll_up_into_lake(spark, tmp_path_factory.mktemp("hourly"))
    written = hourly.roll_closed_hours(lake, lateness_s=30.0)
    assert written == {"group_status_1h": CLOSED, "lag_1h": CLOSED}
    return lake


def _sql(sql: str, params: Any = None) -> list[tuple]:
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _stored(lake: Path, table: str, columns: str) -> list[tuple]:
    return sorted(_sql(f"SELECT {columns} FROM read_parquet('{lake.as_posix()}/{table}/date=*/h*.parquet')"))


def _expected(lake: Path, minute_table: str, key: str, aggregates: str, last: str) -> list[tuple]:
    """The hourly rows from the raw minute files: newest version per minute key, then per hour
    the aggregates and the newest minute row's `last` columns (closed hours only), plus the
    hour's highest version."""
    ranks = ", ".join(f"('{name}', {rank})" for rank, name in enumerate(STATUS_ORDER))
    files = f"read_parquet('{lake.as_posix()}/{minute_table}/date=*/*.parquet')"
    return sorted(
        _sql(
            f"""
            WITH raw AS (SELECT *, date_trunc('hour', window_start) AS hour FROM {files}),
            newest AS (
                SELECT * FROM raw
                QUALIFY row_number() OVER (PARTITION BY {key}, window_start ORDER BY version DESC) = 1
            ),
            ranks(status, rank) AS (VALUES {ranks}),
            agg AS (
                SELECT {key}, hour, arg_max(newest.status, ranks.rank) AS worst, {aggregates}, count(*) AS minutes
                FROM newest LEFT JOIN ranks USING (status) GROUP BY ALL
            ),
            last AS (
                SELECT {key}, hour, {last} FROM newest
                QUALIFY row_number() OVER (PARTITION BY {key}, hour ORDER BY window_start DESC) = 1
            ),
            versions AS (SELECT hour, max(version) AS version FROM raw GROUP BY hour)
            SELECT * FROM agg JOIN last USING ({key}, hour) JOIN versions USING (hour)
            WHERE hour < $open
            """,
            {"open": OPEN_HOUR},
        )
    )


def test_lag_1h_equals_the_minute_rows_aggregated_for_every_partition(lake: Path):
    key = "cluster, group_id, topic, partition"
    expected = _expected(lake, "lag_1m", key, "max(lag_max), max(time_lag_s)", "lag, committed_offset, end_offset")
    stored = _stored(
        lake,
        "lag_1h",
        f"{key}, hour_start, worst_status, max_lag, max_time_lag_s, minutes, "
        "last_lag, last_committed_offset, last_end_offset, version",
    )
    assert len(expected) == 4 * len(CLOSED)  # four partitions, every closed hour
    assert stored == expected
    assert {row[5] for row in stored} >= {"STOP", "REWIND", "OK"}, "the workload's statuses reached the hours"
    # Minutes: from 22:35, then whole hours.
    assert [row[8] for row in stored if row[1] == "g-steady"] == [25, 60, 60] * 2


def test_group_status_1h_equals_the_minute_rows_aggregated_for_every_group(lake: Path):
    key = "cluster, group_id"
    expected = _expected(
        lake,
        "group_status",
        key,
        "max(total_lag), max(max_lag), max(max_time_lag_s), max(rebalances)",
        "status, reason, total_lag, group_type",
    )
    stored = _stored(
        lake,
        "group_status_1h",
        f"{key}, hour_start, worst_status, max_total_lag, max_max_lag, max_time_lag_s, rebalances, minutes, "
        "last_status, last_reason, last_total_lag, group_type, version",
    )
    assert len(expected) == 3 * len(CLOSED)
    assert stored == expected
    worst = {(row[1], row[2]): row[3] for row in stored}
    assert worst[("g-stop", CLOSED[1])] == "STOP" and worst[("g-rewind", CLOSED[2])] == "REWIND"
    assert any(row[3] != row[9] for row in stored), "some hour's worst status is not its last one"


def test_rewritten_minutes_count_once_with_their_newest_values(lake: Path):
    """The batches end mid-minute, so minutes were written twice: the hours saw the newer rows."""
    (rewritten,) = _sql(
        f"SELECT count(*) FROM (SELECT group_id, partition, window_start FROM "
        f"read_parquet('{lake.as_posix()}/lag_1m/date=*/*.parquet') WHERE window_start < $open "
        "GROUP BY ALL HAVING count(DISTINCT version) > 1)",
        {"open": OPEN_HOUR},
    )
    assert rewritten[0] > 10
    minutes = _stored(lake, "lag_1h", "sum(minutes)")
    assert minutes == [(4 * (25 + 60 + 60),)]


def test_the_open_hour_is_not_written_and_a_rerun_writes_the_same_files(lake: Path):
    files = sorted(lake.glob("*_1h/date=*/h*.parquet"))
    assert [f.stem for f in files] == ["h20260228T22", "h20260228T23", "h20260301T00"] * 2
    for table in ("group_status_1h", "lag_1h"):
        sql = f"SELECT count(*) FROM read_parquet('{lake.as_posix()}/{table}/*/*.parquet') WHERE hour_start >= $open"
        assert _sql(sql, {"open": OPEN_HOUR}) == [(0,)]
    before = {f: pq.read_table(f) for f in files}

    again = [
        path
        for table in ("group_status_1h", "lag_1h")
        for hour in CLOSED
        for path in hourly.write_hour(lake, table, hour)
    ]

    assert sorted(again) == files
    assert all(pq.read_table(f).equals(before[f]) for f in files)
    assert hourly.roll_closed_hours(lake, lateness_s=30.0) == {}
