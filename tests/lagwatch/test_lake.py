"""The lake contract on real files: a reader holding a DuckDB session open while files are written."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import duckdb
import pytest

from lagwatch import lake as lakelib
from spark_jobs.lake_sink import write_batch

WHEN = dt.datetime(2026, 7, 1, 8, 30, tzinfo=dt.UTC)


def _window_rows(batch_id: int, windows: int) -> object:
    return lakelib.rows_to_arrow(
        "metrics_10s",
        [
            {
                "cluster": "c",
                "window_start": WHEN + dt.timedelta(seconds=10 * w),
                "window_end": WHEN + dt.timedelta(seconds=10 * w + 10),
                "source": "jmx",
                "metric": "m",
                "kind": "gauge",
                "broker": "1",
                "samples": batch_id + 1,
                "last": float(batch_id),
            }
            for w in range(windows)
        ],
    )


def test_open_reader_never_blocks_the_writer_and_sees_new_files(tmp_path: Path) -> None:
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    lakelib.write_views_file(lake, views)
    reader = lakelib.connect_readonly(lake, views)  # held open for the whole test
    errors: list[BaseException] = []
    seen: list[int] = []
    done = threading.Event()

    def keep_querying() -> None:
        while not done.is_set():
            try:
                seen.append(reader.cursor().execute("select count(*) from metrics_10s").fetchone()[0])
            except duckdb.Error as exc:  # a half-written file or a lock would show up here
                errors.append(exc)

    thread = threading.Thread(target=keep_querying)
    thread.start()
    for batch_id in range(40):
        write_batch(lake, "metrics_10s", _window_rows(batch_id, windows=batch_id + 1), batch_id, "w")
    lakelib.write_views_file(lake, views)  # rebuilt while the reader holds the old file open
    done.set()
    thread.join()

    assert errors == []
    assert seen and max(seen) <= 40
    rows = reader.execute("select count(*), max(samples), min(last) from metrics_10s").fetchone()
    assert rows == (40, 40, 39.0), "one row per window, newest version (last batch) wins"
    ts = reader.execute("select min(window_start) from metrics_10s").fetchone()[0]
    assert ts == WHEN, "TIMESTAMPTZ read back as the same UTC instant"
    reader.close()
    fresh = duckdb.connect(str(views), read_only=True)
    assert fresh.execute("select count(*) from metrics_10s").fetchone()[0] == 40
    fresh.close()


def test_measured_values_skip_dictionary_encoding_and_labels_keep_it(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    (path,) = write_batch(tmp_path / "lake", "metrics_10s", _window_rows(3, windows=50), 3, "w")
    columns = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {columns.column(i).path_in_schema: columns.column(i).encodings for i in range(columns.num_columns)}

    assert not any("DICTIONARY" in e for e in encodings["last"] + encodings["min"]), encodings
    assert any("DICTIONARY" in e for e in encodings["metric"]), encodings
    assert any("DICTIONARY" in e for e in encodings["window_start"]), encodings
    rows = duckdb.sql(f"select count(*), sum(last) from read_parquet('{path.as_posix()}')").fetchall()
    assert rows == [(50, 150.0)]


#: (table, a row as an older version wrote it, the column it holds, the columns added since).
OLDER_ROWS = {
    "lag_1m owner columns": (
        "lag_1m",
        {"cluster": "c", "window_start": WHEN, "group_id": "g", "topic": "t", "partition": 0, "lag": 5, "version": 1},
        "lag",
        ["owner_member_id", "owner_client_id", "owner_host", "owner_changes"],
    ),
    "group_status rebalance columns": (
        "group_status",
        {
            "cluster": "c",
            "group_id": "g",
            "status": "OK",
            "rebalances": 5,
            "window_start": WHEN,
            "updated_at": WHEN,
            "version": 1,
        },
        "rebalances",
        ["rebalancing_s", "storm_rebalances"],
    ),
}


@pytest.mark.parametrize("case", sorted(OLDER_ROWS))
def test_a_lake_written_before_columns_were_added_reads_them_as_null(tmp_path: Path, case: str) -> None:
    """Files from before a table gained columns: the views and compaction give NULL there."""
    import pyarrow.parquet as pq

    from lagwatch.lake_maintenance import newest_rows

    name, row, kept, new_columns = OLDER_ROWS[case]
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    old = lakelib.rows_to_arrow(name, [row]).drop_columns(new_columns)
    day = lakelib.table_dir(lake, name) / "date=2026-07-01"
    schema_file = lakelib.table_dir(lake, name) / lakelib.SCHEMA_PARTITION / lakelib.SCHEMA_FILE
    for path, data in ((day / "b1.parquet", old), (schema_file, old.schema.empty_table())):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, path)

    lakelib.write_views_file(lake, views)
    con = lakelib.connect_readonly(lake, views)
    try:
        assert con.execute(f"select {kept}, {', '.join(new_columns)} from {name}").fetchall() == [
            (5, *[None] * len(new_columns))
        ]
    finally:
        con.close()
    compacted = newest_rows(name, [day / "b1.parquet"])
    assert compacted.schema == lakelib.arrow_schema(name)
    assert compacted.select(new_columns).to_pylist() == [dict.fromkeys(new_columns)]


MIDNIGHT = dt.datetime(2026, 7, 2, tzinfo=dt.UTC)
HOUR = dt.timedelta(hours=1)


def _status_rows(minutes: range, lag: int) -> object:
    """group_status rows of groups a and b, one per minute from MIDNIGHT (negative: the day before)."""
    return lakelib.rows_to_arrow(
        "group_status",
        [
            {
                "cluster": "c",
                "group_id": group,
                "status": "OK",
                "total_lag": lag,
                "window_start": MIDNIGHT + dt.timedelta(minutes=m),
                "updated_at": MIDNIGHT + dt.timedelta(minutes=m, seconds=30),
            }
            for m in minutes
            for group in ("a", "b")
        ],
    )


def test_range_macros_read_only_the_days_of_their_range_and_show_what_the_view_shows(tmp_path: Path) -> None:
    """`<table>_between(since, until)` is the view's rows in [since, until), re-versioned rows and a
    compaction's copy included, over a range across midnight, one with a day without a folder, and one
    with no folder at all. A file no Parquet reader can open sits in an older day's folder: the ranges
    that do not touch that day never open it (the view, which lists every file, fails on it)."""
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    write_batch(lake, "group_status", _status_rows(range(-90, 90), lag=1), 1, "q")
    write_batch(lake, "group_status", _status_rows(range(-30, 30), lag=2), 2, "q")  # rewrites an hour
    copy = lakelib.table_dir(lake, "group_status") / "date=2026-07-02"
    (copy / "c-copy.parquet").write_bytes(next(copy.glob("b*2*.parquet")).read_bytes())  # compaction's overlap
    lakelib.write_views_file(lake, views)
    con = lakelib.connect_readonly(lake, views)
    try:
        for statement in lakelib.range_macro_statements(lake, ["group_status"]):
            con.execute(statement)

        def rows(sql: str, since: dt.datetime, until: dt.datetime) -> list[tuple]:
            return sorted(con.execute(sql, {"since": since, "until": until}).fetchall())

        view = "SELECT * FROM group_status WHERE window_start >= $since AND window_start < $until"
        macro = "SELECT * FROM group_status_between($since, $until)"
        ranges = {
            "across midnight": (MIDNIGHT - dt.timedelta(minutes=45), MIDNIGHT + dt.timedelta(minutes=45)),
            "a day without a folder": (MIDNIGHT + dt.timedelta(minutes=80), MIDNIGHT + dt.timedelta(days=2)),
            "no folder": (MIDNIGHT + dt.timedelta(days=5), MIDNIGHT + dt.timedelta(days=6)),
        }
        for name, (since, until) in ranges.items():
            assert rows(macro, since, until) == rows(view, since, until), name
        across = rows(macro, *ranges["across midnight"])
        lags = rows(
            "SELECT window_start, total_lag FROM group_status_between($since, $until)", *ranges["across midnight"]
        )
        assert len(across) == 2 * 90 and {lag for _, lag in lags} == {1, 2}, "one row per key, its newest version"
        assert all(lag == 2 for start, lag in lags if abs(start - MIDNIGHT) < dt.timedelta(minutes=30))
        stored = con.execute(
            "SELECT count(*) FROM group_status_versions($since, $until)",
            {"since": MIDNIGHT, "until": MIDNIGHT + dt.timedelta(minutes=30)},
        ).fetchone()
        assert stored == (2 * 30 * 3,), "every version and copy as stored"

        old_day = lakelib.table_dir(lake, "group_status") / "date=2026-06-30"
        old_day.mkdir()
        (old_day / "b-broken.parquet").write_bytes(b"not parquet")
        for statement in lakelib.range_macro_statements(lake, ["group_status"]):  # a new session's macros
            con.execute(statement)
        assert rows(macro, *ranges["across midnight"]) == across
        with pytest.raises(duckdb.Error):
            rows(macro, old_day_start := dt.datetime(2026, 6, 30, 23, tzinfo=dt.UTC), old_day_start + HOUR)
        with pytest.raises(duckdb.Error):
            con.execute("SELECT count(*) FROM group_status").fetchall()
    finally:
        con.close()
