"""The hourly tables' files: which minute table each rolls up, how an hour's file is named, and
which hours are written or have minute rows, read from the lake's Parquet footers.

Why footers: the writer keeps no state of its own (a restart catches up by looking at what is
there), and a check that runs every minute must stay cheap: a footer holds each row group's
min/max time, so no data page is read to learn which hours a file covers. A compacted file
(``lagwatch.lake_maintenance``) that merged hourly files covers the hours between its smallest
and largest time; an hour inside that span with no row had no minute row to roll up either.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from pathlib import Path

from lagwatch import lake as lakelib

HOUR = dt.timedelta(hours=1)
#: hourly table → the minute table whose rows it aggregates (newest version per key, as the views show).
HOURLY_SOURCES: dict[str, str] = {"group_status_1h": "group_status", "lag_1h": "lag_1m"}
#: The minute tables' column that says how new the lag data is: the newest observation's time.
NEWEST_DATA = ("group_status", "updated_at")
HOUR_FILE_PREFIX = "h"


def hour_file_stem(hour: dt.datetime) -> str:
    """The one file name of an hour (within its date partition): a rerun replaces its own file."""
    return f"{HOUR_FILE_PREFIX}{hour.astimezone(dt.UTC):%Y%m%dT%H}"


def hour_of(moment: dt.datetime) -> dt.datetime:
    """The UTC hour `moment` falls in."""
    return moment.astimezone(dt.UTC).replace(minute=0, second=0, microsecond=0)


def _day_partition(lake: str | os.PathLike[str], table: str, day: dt.date) -> Path:
    return lakelib.table_dir(lake, table) / f"date={day.isoformat()}"


def _parquet_files(partition: Path) -> list[Path]:
    if not partition.is_dir():
        return []
    return sorted(f for f in partition.glob("*.parquet") if f.name != lakelib.SCHEMA_FILE)


def _time_spans(files: Iterable[Path], column: str) -> list[tuple[dt.datetime, dt.datetime]]:
    """(min, max) of `column` per row group, from the footers (a file gone meanwhile is skipped)."""
    import pyarrow.parquet as pq

    spans = []
    for file in files:
        try:
            metadata = pq.ParquetFile(file).metadata
        except (FileNotFoundError, OSError):  # replaced by compaction or deleted after its grace period
            continue
        index = metadata.schema.names.index(column) if column in metadata.schema.names else None
        if index is None:
            continue
        for group in range(metadata.num_row_groups):
            stats = metadata.row_group(group).column(index).statistics
            if stats is not None and stats.has_min_max:
                spans.append((_utc(stats.min), _utc(stats.max)))
    return spans


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def _hours_in(spans: Iterable[tuple[dt.datetime, dt.datetime]], hours: Iterable[dt.datetime]) -> set[dt.datetime]:
    spans = list(spans)
    return {hour for hour in hours if any(low < hour + HOUR and high >= hour for low, high in spans)}


def written_hours(lake: str | os.PathLike[str], hourly: str, hours: Iterable[dt.datetime]) -> set[dt.datetime]:
    """The `hours` (whole UTC hours) for which `hourly` holds rows: an hour's own file by its name,
    a compacted file by its footer."""
    hours = set(hours)
    written: set[dt.datetime] = set()
    for day in sorted({hour.date() for hour in hours}):
        files = _parquet_files(_day_partition(lake, hourly, day))
        stems = {f.stem for f in files}
        written |= {hour for hour in hours if hour.date() == day and hour_file_stem(hour) in stems}
        merged = [f for f in files if not f.name.startswith(HOUR_FILE_PREFIX)]
        if merged:
            written |= _hours_in(_time_spans(merged, "hour_start"), hours)
    return written


def hours_with_rows(lake: str | os.PathLike[str], minute_table: str, hours: Iterable[dt.datetime]) -> set[dt.datetime]:
    """The `hours` a row group of `minute_table` may have rows in (by its footer's window_start span)."""
    hours = set(hours)
    spans = []
    for day in sorted({hour.date() for hour in hours}):
        spans += _time_spans(_parquet_files(_day_partition(lake, minute_table, day)), "window_start")
    return _hours_in(spans, hours)


def newest_data(lake: str | os.PathLike[str]) -> dt.datetime | None:
    """When the newest lag observation in the lake was measured (None before the first one).

    Only the newest date partitions' footers are read: the newest row is in the newest day.
    """
    table, column = NEWEST_DATA
    root = lakelib.table_dir(lake, table)
    if not root.is_dir():
        return None
    days = sorted(
        (p for p in root.iterdir() if p.is_dir() and p.name.startswith("date=") and p.name != lakelib.SCHEMA_PARTITION),
        reverse=True,
    )
    for partition in days[:2]:
        spans = _time_spans(_parquet_files(partition), column)
        if spans:
            return max(high for _, high in spans)
    return None


def written_until(lake: str | os.PathLike[str], hourly: str, start: dt.datetime, end: dt.datetime) -> dt.datetime:
    """The hour after the newest written hour of `hourly` in [start, end) (`start` when none):
    where a reader of that range switches from the hourly rows to the minute rows (``lake_queries.hourly_rows``)."""
    hours = []
    hour = hour_of(start)
    while hour < end:
        hours.append(hour)
        hour += HOUR
    written = written_hours(lake, hourly, hours)
    return max(written) + HOUR if written else hour_of(start)
