"""The hourly tables (`group_status_1h`, `lag_1h`), written once per hour after the hour has closed.

Why: a page or a backtest over days would otherwise read one lag_1m row per partition and minute
(millions at fleet size); an hourly row per partition is sixty times fewer. An hour is closed
when its end is older than the newest lag observation in the lake by `spark.watermark_s`, the
lateness after which the job's minute windows no longer change. Its rows are aggregated by
DuckDB from the minute views (newest version per key: ``lagwatch.lake_queries.hourly_from_minutes``)
and written as one file per hour and table, named by the hour, through the lake's atomic writer:
a rerun replaces its own file. The writer keeps no state: the files present say which hours are
done (``lagwatch.lake_hours``), so a restart catches up on the closed hours of the last
`CATCH_UP_DAYS` days that have minute rows but no hourly file. The open hour is never written;
readers add it from the minute rows (``lagwatch.lake_queries.hourly_rows``).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lagwatch import lake as lakelib
from lagwatch.lake_hours import (
    HOUR,
    HOURLY_SOURCES,
    hour_file_stem,
    hour_of,
    hours_with_rows,
    newest_data,
    written_hours,
)
from lagwatch.lake_queries import hourly_from_minutes

log = logging.getLogger(__name__)

#: How far back a (re)started job looks for closed hours without their hourly rows.
CATCH_UP_DAYS = 7
#: How often the job's loop looks for a newly closed hour (a check with nothing to do reads a few footers).
CHECK_INTERVAL_S = 60.0
#: Hours written per check and table, oldest first: a long catch-up takes the driver's CPU in small portions.
MAX_HOURS_PER_CHECK = 6


def closed_hours(newest: dt.datetime, lateness_s: float, days: float = CATCH_UP_DAYS) -> list[dt.datetime]:
    """The whole UTC hours of the last `days` whose end is at least `lateness_s` older than `newest`."""
    last = hour_of(newest - dt.timedelta(seconds=lateness_s)) - HOUR
    first = hour_of(newest - dt.timedelta(days=days))
    hours = []
    hour = first
    while hour <= last:
        hours.append(hour)
        hour += HOUR
    return hours


def pending_hours(lake: str | os.PathLike[str], hourly: str, hours: list[dt.datetime]) -> list[dt.datetime]:
    """The `hours` with minute rows but no hourly file, oldest first."""
    missing = set(hours) - written_hours(lake, hourly, hours)
    return sorted(hours_with_rows(lake, HOURLY_SOURCES[hourly], missing)) if missing else []


def _connect(lake: Path, tables: list[str]) -> Any:
    """An in-memory DuckDB session with the lake's views of `tables` only (binding every view
    would read every table's footers)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for statement in lakelib.view_statements(lake):
        if any(statement.startswith(f"CREATE OR REPLACE VIEW {name} AS ") for name in tables):
            con.execute(statement)
    return con


def _newest_version(lake: Path, minute_table: str, con: Any, start: dt.datetime, end: dt.datetime) -> int:
    """The highest version among the hour's minute rows: the newest version of a key is its
    highest, so this is the highest among the rows the view shows, with no dedupe needed."""
    # The hour's rows are all in its day's partition (files are partitioned by window_start).
    glob = (lakelib.table_dir(lake, minute_table).resolve() / f"date={start:%Y-%m-%d}" / "*.parquet").as_posix()
    ((version,),) = con.execute(
        f"SELECT max(version) FROM read_parquet('{glob}', hive_partitioning = false, union_by_name = true) "
        "WHERE window_start >= $start AND window_start < $end",
        {"start": start, "end": end},
    ).fetchall()
    return 0 if version is None else int(version)


def write_hour(lake: str | os.PathLike[str], hourly: str, hour: dt.datetime, con: Any = None) -> list[Path]:
    """Aggregate `hour`'s minute rows into `hourly`'s file of that hour (replacing it); [] when
    the hour has no minute row. Every row carries the hour's highest minute version."""
    import pyarrow as pa

    root = Path(lake)
    own = con is None
    con = _connect(root, [HOURLY_SOURCES[hourly]]) if own else con
    try:
        bounds = {"start": hour, "end": hour + HOUR}
        sql = hourly_from_minutes(hourly, "window_start >= $start AND window_start < $end")
        data = con.sql(sql, params=bounds).to_arrow_table()
        if data.num_rows == 0:
            return []
        version = _newest_version(root, HOURLY_SOURCES[hourly], con, hour, hour + HOUR)
        data = data.append_column("version", pa.array([version] * data.num_rows, pa.int64()))
        return lakelib.write_rows(root, hourly, data, file_stem=hour_file_stem(hour))
    finally:
        if own:
            con.close()


def roll_closed_hours(
    lake: str | os.PathLike[str], lateness_s: float, limit: int = MAX_HOURS_PER_CHECK
) -> dict[str, list[dt.datetime]]:
    """Write every hourly table's closed hours that lack their file (at most `limit` per table);
    returns the hours written per table."""
    root = Path(lake)
    newest = newest_data(root)
    if newest is None:
        return {}
    hours = closed_hours(newest, lateness_s)
    todo = {hourly: pending_hours(root, hourly, hours)[:limit] for hourly in HOURLY_SOURCES}
    if not any(todo.values()):
        return {}
    lakelib.ensure_lake(root)
    con = _connect(root, [HOURLY_SOURCES[hourly] for hourly, pending in todo.items() if pending])
    try:
        done = {
            hourly: [hour for hour in pending if write_hour(root, hourly, hour, con)]
            for hourly, pending in todo.items()
        }
    finally:
        con.close()
    log.info("hourly rollups written: %s", {t: [f"{h:%Y-%m-%d %H}:00" for h in hs] for t, hs in done.items() if hs})
    return done


@dataclass
class HourlyRollups:
    """The job loop's timer for :func:`roll_closed_hours`: a check at most every `interval_s`, in
    a thread of its own, so that aggregating an hour (seconds at fleet size) never holds the loop
    that watches the queries and the stop signals. A check still running skips the next one."""

    lake: Path
    lateness_s: float
    interval_s: float = CHECK_INTERVAL_S
    next_check: float = 0.0
    worker: threading.Thread | None = field(default=None, repr=False)

    def maybe_run(self) -> None:
        if time.monotonic() < self.next_check or (self.worker is not None and self.worker.is_alive()):
            return
        self.next_check = time.monotonic() + self.interval_s
        # A daemon: a stop never waits for it, and what it writes is atomic (an unfinished file is a temp file).
        self.worker = threading.Thread(target=self.run_once, name="hourly-rollups", daemon=True)
        self.worker.start()

    def run_once(self) -> None:
        try:
            roll_closed_hours(self.lake, self.lateness_s)
        except Exception:  # the hourly tables must never stop the pipeline; the next check retries
            log.exception("hourly rollups failed")
