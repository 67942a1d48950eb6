"""The dashboard's reads from the lake: one module per page (its SQL and its loaders), and here
what every one of them shares: where the lake is, the scope a page shows, one read-only
connection per loader, parameter binding and the key-column filters.

Why a module per page: the pages only render DataFrames, so the benchmark
(`bench/bench_dashboard.py`) times exactly what a page runs by calling the same loaders
(`dashboard.queries.loaders.PAGE_LOADERS`), and a page's SQL is reviewed for safety beside the
loader that runs it. Rules every module keeps:

- Every loader opens its own read-only connection (`session`) and closes it before returning:
  nothing is held across Streamlit reruns, so the pipeline and other readers are never blocked.
- Values from the operator (cluster, group, topic, time range) reach DuckDB only as bound
  parameters (`$name`, see `run`); the SQL text is constant.
- Queries are shaped for the newest-wins views: a filter on a key column (time, cluster,
  metric, labels) is pushed below the dedupe into the Parquet scan, so "current" values read
  only a short slice at the end of the range instead of deduping seven days. A time range is
  read through the session's `<table>_between(since, until)` macro (`between`), which lists only
  the date folders of the range's days, so a last-hour page reads no footer of older days.
  Tables whose key lacks the time column are read through their `<table>_since(start)` macro.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from lagwatch import lake as lakelib
from lagwatch import vocabulary

if TYPE_CHECKING:
    import duckdb

    from lagwatch.config import Config

#: "Current" values come from this slice at the end of the range (a few collect cycles).
LATEST_LOOKBACK = dt.timedelta(minutes=10)
#: Per-entity state (group status, scrape targets, collectors) is looked up over this slice, so
#: an entity that went silent minutes ago still shows (as silent) without scanning 7 days.
RECENT_LOOKBACK = dt.timedelta(hours=1)
#: The tables the pages read by time range through their session macros (see `between`): each
#: macro costs a millisecond or two to make, so only these have them.
RANGED_TABLES = ("group_status", "lag_1m", "metrics_1m")
#: Time series are bucketed so a chart never carries more points than this per series.
MAX_POINTS = 400
#: A range longer than this reads the hourly tables (lag_1h) for its closed hours, in buckets of
#: whole hours, instead of sixty minute rows per hour (docs/dashboard.md, "Hourly rows").
HOURLY_AFTER = dt.timedelta(hours=24)

#: What a loader returns: named DataFrames, one per section of its page.
Frames = dict[str, pd.DataFrame]


@dataclass(frozen=True)
class Lake:
    """Where the lake and its views file are (resolved against the config file's folder)."""

    path: Path
    duckdb_path: Path

    @classmethod
    def from_config(cls, config: Config) -> Lake:
        return cls(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))


@dataclass(frozen=True)
class Scope:
    """What every page shows: one cluster over [start, end) (aware UTC datetimes)."""

    cluster: str
    start: dt.datetime
    end: dt.datetime

    @property
    def bucket_s(self) -> int:
        """Chart bucket: whole minutes, at most MAX_POINTS buckets over the range."""
        seconds = (self.end - self.start).total_seconds()
        return max(60, math.ceil(seconds / MAX_POINTS / 60) * 60)

    @property
    def hourly(self) -> bool:
        """Whether a chart over this range reads hourly rows (see HOURLY_AFTER)."""
        return self.end - self.start > HOURLY_AFTER

    @property
    def hourly_bucket_s(self) -> int:
        """Chart bucket over hourly rows: whole hours (an hour is never split), at most MAX_POINTS."""
        return math.ceil(self.bucket_s / 3600) * 3600

    @property
    def latest_start(self) -> dt.datetime:
        return max(self.start, self.end - LATEST_LOOKBACK)

    @property
    def recent_start(self) -> dt.datetime:
        return max(self.start, self.end - RECENT_LOOKBACK)

    def params(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "start": self.start,
            "end": self.end,
            "latest_start": self.latest_start,
            "recent_start": self.recent_start,
            "bucket_s": self.bucket_s,
        }


@contextmanager
def session(lake: Lake) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for one loader; always closed, even when a query fails.

    Parquet footers are cached for the connection's life: a page scans the same table several
    times (the groups index, then the page's whole rows); the cache is checked against each file's
    modification time, and dies with the connection. The ranged-read macros
    (`lagwatch.lake.range_macro_statements`) are made here, over the date folders there are now.
    """
    con = lakelib.connect_readonly(lake.path, lake.duckdb_path)
    try:
        con.execute("SET parquet_metadata_cache = true")
        for statement in lakelib.range_macro_statements(lake.path, RANGED_TABLES):
            con.execute(statement)
        yield con
    finally:
        con.close()


_PARAM = re.compile(r"\$([a-z_]+)")


def bind(sql: str, values: dict[str, Any]) -> dict[str, Any]:
    """The values of the `$names` `sql` uses, only those (DuckDB rejects unused ones)."""
    used = set(_PARAM.findall(sql))
    missing = used - values.keys()
    if missing:
        raise KeyError(f"query needs parameters {sorted(missing)}")
    return {k: v for k, v in values.items() if k in used}


def run(con: duckdb.DuckDBPyConnection, sql: str, **values: Any) -> pd.DataFrame:
    """Execute `sql` binding only the `$names` it uses."""
    return con.execute(sql, bind(sql, values)).df()


def run_each(con: duckdb.DuckDBPyConnection, params: dict[str, Any], **statements: str) -> Frames:
    """Each named statement's result, in turn on one connection: a page's sections by name."""
    return {name: run(con, sql, **params) for name, sql in statements.items()}


# ---------------------------------------------------------------------------------------
# SQL pieces the page modules share. Every filter on a view uses key columns so it is pushed
# into the Parquet scan.

#: The spans a page reads, as (since, until) SQL: the range, its latest slice, its recent slice.
RANGE = ("$start", "$end")
LATEST = ("$latest_start", "$end")
RECENT = ("$recent_start", "$end")


def between(table: str, span: tuple[str, str] = RANGE) -> str:
    """`table`'s rows (newest version per key) with window_start in the span: its session macro,
    which lists only the date folders of the span's days (see `session`)."""
    return f"{table}_between({', '.join(span)})"


BUCKET = "time_bucket(to_seconds($bucket_s), window_start)"

#: Sample sources as the SQL names them.
ADMIN, JMX, TARGETS = vocabulary.Source.ADMIN, vocabulary.JMX_SOURCES, vocabulary.TARGET_SOURCES
SCRAPED_SOURCES = (*TARGETS, vocabulary.Source.PROBE.value)
#: Broker meters shown on the overview, brokers and topics pages.
BROKER_RATE_METRICS = vocabulary.require("messages_in_total", "bytes_in_total", "bytes_out_total")
UP, SCRAPE_DURATION = vocabulary.require("up", "scrape_duration_seconds")
