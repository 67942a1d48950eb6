"""The hourly tables on real files: minute rows written by the lake's own writer, hours rolled up
by spark_jobs.hourly through real DuckDB, read back through the views."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from lagwatch import lake as lakelib
from lagwatch.config import LakeConfig
from lagwatch.lake_hours import written_until
from lagwatch.lake_maintenance import maintain_lake
from lagwatch.lake_queries import hourly_from_minutes, hourly_rows
from spark_jobs import hourly
from spark_jobs.lake_sink import write_batch

UTC = dt.UTC
#: Minute rows from 21:50 to 01:09 across a day boundary: hours 21 to 00 close, 01 stays open.
#: A minute row's index m counts from FIRST: hour 21 is m 0..9, 22 is 10..69, 23 is 70..129, 00 is 130..189.
FIRST = dt.datetime(2026, 2, 28, 21, 50, tzinfo=UTC)
MINUTES = 200
HOURS = [dt.datetime(2026, 2, 28, hour, tzinfo=UTC) for hour in (21, 22, 23)]
HOURS.append(dt.datetime(2026, 3, 1, 0, tzinfo=UTC))
OPEN_HOUR = dt.datetime(2026, 3, 1, 1, tzinfo=UTC)
LATENESS_S = 30.0


def _status(group: str, minute: int) -> str:
    if group == "g-stop" and 30 <= minute < 45:
        return "STOP"
    if group == "g-rewind" and 75 <= minute < 80:
        return "REWIND"
    return "WARN" if minute % 11 == 0 else "OK"


def _group_rows(minutes: range, lag_of: Any = lambda m: m) -> list[dict]:
    rows = []
    for group in ("g-stop", "g-rewind"):
        for m in minutes:
            start = FIRST + dt.timedelta(minutes=m)
            rows.append(
                {
                    "cluster": "c",
                    "group_id": group,
                    "status": _status(group, m),
                    "reason": f"{group} at {m}",
                    "total_lag": lag_of(m) * 2,
                    "max_lag": lag_of(m),
                    "max_time_lag_s": None if m % 13 == 0 else float(m % 17),
                    "rebalances": m % 4,
                    "group_type": None if m == 129 else "classic",  # 23:59
                    "window_start": start,
                    "updated_at": start + dt.timedelta(seconds=45),
                }
            )
    return rows


def _lag_rows(minutes: range, lag_of: Any = lambda m: m) -> list[dict]:
    rows = []
    for group in ("g-stop", "g-rewind"):
        for partition in (0, 1):
            for m in minutes:
                start = FIRST + dt.timedelta(minutes=m)
                rows.append(
                    {
                        "cluster": "c",
                        "group_id": group,
                        "topic": "t",
                        "partition": partition,
                        "window_start": start,
                        "window_end": start + dt.timedelta(minutes=1),
                        "committed_offset": 1000 + m,
                        "end_offset": 1000 + m + lag_of(m) + partition,
                        "lag": lag_of(m) + partition,
                        "lag_max": lag_of(m) + partition + (m % 3),
                        "time_lag_s": None if m % 7 == 0 else float(m % 29),
                        "status": _status(group, m),
                    }
                )
    return rows


def _write_minutes(lake: Path, batch_id: int, minutes: range, lag_of: Any = lambda m: m) -> None:
    write_batch(
        lake, "group_status", lakelib.rows_to_arrow("group_status", _group_rows(minutes, lag_of)), batch_id, "q"
    )
    write_batch(lake, "lag_1m", lakelib.rows_to_arrow("lag_1m", _lag_rows(minutes, lag_of)), batch_id, "q")


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    root = tmp_path / "lake"
    _write_minutes(root, 1, range(MINUTES))
    return root


def _hour_files(lake: Path, table: str) -> list[Path]:
    return sorted(lakelib.table_dir(lake, table).glob("date=*/h*.parquet"))


def _query(lake: Path, sql: str, params: Any = None) -> list[tuple]:
    views = lake.parent / "lagwatch.duckdb"
    lakelib.write_views_file(lake, views)
    con = lakelib.connect_readonly(lake, views)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def test_each_closed_hour_is_written_once_and_the_open_hour_never(lake: Path) -> None:
    written = hourly.roll_closed_hours(lake, LATENESS_S)

    assert written == {"group_status_1h": HOURS, "lag_1h": HOURS}
    for table in ("group_status_1h", "lag_1h"):
        names = [f"{p.parent.name}/{p.name}" for p in _hour_files(lake, table)]
        assert names == [
            "date=2026-02-28/h20260228T21.parquet",
            "date=2026-02-28/h20260228T22.parquet",
            "date=2026-02-28/h20260228T23.parquet",
            "date=2026-03-01/h20260301T00.parquet",
        ]
    mtimes = [p.stat().st_mtime_ns for p in _hour_files(lake, "lag_1h")]
    assert hourly.roll_closed_hours(lake, LATENESS_S) == {}, "nothing new closed: nothing written"
    assert [p.stat().st_mtime_ns for p in _hour_files(lake, "lag_1h")] == mtimes
    assert _query(lake, "SELECT DISTINCT hour_start FROM lag_1h ORDER BY 1") == [(h,) for h in HOURS]
    groups = _query(
        lake,
        "SELECT group_id, hour_start, worst_status, last_status, minutes, group_type "
        "FROM group_status_1h ORDER BY 1, 2",
    )
    assert groups == [
        ("g-rewind", HOURS[0], "WARN", "OK", 10, "classic"),
        ("g-rewind", HOURS[1], "WARN", "OK", 60, "classic"),
        ("g-rewind", HOURS[2], "REWIND", "OK", 60, None),  # the newest row's, whole: NULL at 23:59
        ("g-rewind", HOURS[3], "WARN", "OK", 60, "classic"),
        ("g-stop", HOURS[0], "WARN", "OK", 10, "classic"),
        ("g-stop", HOURS[1], "STOP", "OK", 60, "classic"),
        ("g-stop", HOURS[2], "WARN", "OK", 60, None),
        ("g-stop", HOURS[3], "WARN", "OK", 60, "classic"),
    ]


def test_an_hour_closes_only_once_its_end_is_older_than_the_newest_data_by_the_lateness() -> None:
    end = HOURS[3] + hourly.HOUR
    assert hourly.closed_hours(end + dt.timedelta(seconds=30), 30.0)[-1] == HOURS[3]
    assert hourly.closed_hours(end + dt.timedelta(seconds=29), 30.0)[-1] == HOURS[2]
    assert len(hourly.closed_hours(end, 0.0, days=1)) == 24


def test_values_follow_the_newest_minute_rows_and_the_newest_row_of_the_hour(lake: Path) -> None:
    # Minutes 60..69 (22:50..22:59) rewritten by a later batch: larger lags, LOSS on one minute.
    _write_minutes(lake, 7, range(60, 70), lag_of=lambda m: 10_000 + m)
    loss = [dict(r, status="LOSS", reason="lost") for r in _lag_rows(range(65, 66), lambda m: 10_000 + m)]
    write_batch(lake, "lag_1m", lakelib.rows_to_arrow("lag_1m", loss), 8, "q")

    hourly.roll_closed_hours(lake, LATENESS_S)

    rows = _query(
        lake,
        "SELECT group_id, partition, max_lag, last_lag, last_end_offset, worst_status FROM lag_1h "
        "WHERE hour_start = $h ORDER BY 1, 2",
        {"h": HOURS[1]},
    )
    # max_lag: the largest lag_max, 10_068 + 2 (m = 68); the last values: minute 69's, rewritten.
    assert rows == [
        ("g-rewind", 0, 10_070, 10_069, 1000 + 69 + 10_069, "LOSS"),
        ("g-rewind", 1, 10_071, 10_070, 1000 + 69 + 10_070, "LOSS"),
        ("g-stop", 0, 10_070, 10_069, 1000 + 69 + 10_069, "LOSS"),
        ("g-stop", 1, 10_071, 10_070, 1000 + 69 + 10_070, "LOSS"),
    ]
    versions = {(r["hour_start"], r["version"]) for r in pq.read_table(_hour_files(lake, "lag_1h")[1]).to_pylist()}
    assert versions == {(HOURS[1], 8)}, "the hour's newest minute version"
    assert {r["version"] for r in pq.read_table(_hour_files(lake, "lag_1h")[0]).to_pylist()} == {1}
    stop = _query(
        lake, "SELECT max_max_lag, last_total_lag FROM group_status_1h WHERE hour_start = $h", {"h": HOURS[1]}
    )
    assert stop == [(10_069, 2 * 10_069)] * 2


def test_a_rerun_rewrites_its_own_file_with_the_same_rows(lake: Path) -> None:
    hourly.roll_closed_hours(lake, LATENESS_S)
    before = {p: pq.read_table(p) for p in _hour_files(lake, "lag_1h") + _hour_files(lake, "group_status_1h")}

    again = hourly.write_hour(lake, "lag_1h", HOURS[2]) + hourly.write_hour(lake, "group_status_1h", HOURS[2])

    assert sorted(again) == sorted(p for p in before if "T23" in p.name)
    assert len(again) == 2
    after = {p: pq.read_table(p) for p in _hour_files(lake, "lag_1h") + _hour_files(lake, "group_status_1h")}
    assert list(after) == list(before)
    assert all(after[p].equals(before[p]) for p in before)


def test_a_restart_catches_up_on_missing_hours_oldest_first_and_bounded(lake: Path) -> None:
    old = dt.datetime(2026, 2, 20, 10, tzinfo=UTC)  # beyond CATCH_UP_DAYS of the newest data
    rows = [dict(r, window_start=old, updated_at=old) for r in _group_rows(range(1))]
    write_batch(lake, "group_status", lakelib.rows_to_arrow("group_status", rows), 1, "old")
    assert hourly.roll_closed_hours(lake, LATENESS_S, limit=1) == {"group_status_1h": HOURS[:1], "lag_1h": HOURS[:1]}
    hourly.roll_closed_hours(lake, LATENESS_S)
    for path in _hour_files(lake, "lag_1h")[1:2] + _hour_files(lake, "group_status_1h")[2:]:
        path.unlink()  # lost files: those hours are written again, and only those

    assert hourly.roll_closed_hours(lake, LATENESS_S) == {"group_status_1h": HOURS[2:], "lag_1h": HOURS[1:2]}
    assert len(_hour_files(lake, "lag_1h")) == len(_hour_files(lake, "group_status_1h")) == len(HOURS)
    assert not lakelib.table_dir(lake, "group_status_1h").joinpath("date=2026-02-20").exists()


def test_hours_merged_by_compaction_stay_written(lake: Path) -> None:
    hourly.roll_closed_hours(lake, LATENESS_S)
    config = LakeConfig(path=str(lake), compact_after_files=2, grace_period_s=0, default_retention_days=100_000)
    maintain_lake(lake, config)  # merges the three hour files of 2026-02-28 into one compacted file
    maintain_lake(lake, config)  # and deletes them (no grace period)
    assert [p.name for p in _hour_files(lake, "lag_1h")] == ["h20260301T00.parquet"]

    assert hourly.roll_closed_hours(lake, LATENESS_S) == {}
    assert _query(lake, "SELECT count(DISTINCT hour_start) FROM lag_1h") == [(4,)]


def test_a_range_reads_stored_hours_and_aggregates_the_open_hour_from_minutes(lake: Path) -> None:
    hourly.roll_closed_hours(lake, LATENESS_S)
    # A minute of a written hour changes afterwards: the range keeps the stored hour (what the
    # writer wrote); the open hour, never written, is aggregated from its minute rows.
    _write_minutes(lake, 9, range(81, 82), lag_of=lambda m: 99_999)
    start, end = HOURS[0], OPEN_HOUR + hourly.HOUR
    minutes_from = written_until(lake, "lag_1h", start, end)
    assert minutes_from == OPEN_HOUR

    sql = hourly_rows("lag_1h", "$start", "$end", "$minutes_from") + "ORDER BY group_id, partition, hour_start"
    rows = _query(lake, sql, {"start": start, "end": end, "minutes_from": minutes_from})
    stored = _query(lake, "SELECT * FROM lag_1h ORDER BY group_id, partition, hour_start")
    everything = _query(lake, hourly_from_minutes("lag_1h", "true"))

    assert [r for r in rows if r[4] != OPEN_HOUR] == stored
    assert max(r[5] for r in rows if r[4] == HOURS[2]) < 99_999
    assert sorted(r for r in rows if r[4] == OPEN_HOUR) == sorted(r for r in everything if r[4] == OPEN_HOUR)
    assert {r[-1] for r in rows if r[4] == OPEN_HOUR} == {10}, "01:00..01:09: ten minutes"


def test_the_job_timer_checks_in_its_own_thread_at_most_once_per_interval(lake: Path) -> None:
    timer = hourly.HourlyRollups(lake, LATENESS_S, interval_s=3600)
    timer.maybe_run()
    first = timer.worker
    assert first is not None
    first.join(timeout=60)
    assert len(_hour_files(lake, "lag_1h")) == len(HOURS)

    _hour_files(lake, "lag_1h")[0].unlink()
    timer.maybe_run()  # within the interval: no check, the lost file stays lost
    assert timer.worker is first
    assert len(_hour_files(lake, "lag_1h")) == len(HOURS) - 1
