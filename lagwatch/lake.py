"""Contract 2: the Parquet lake and the read-only DuckDB views over it.

Layout: ``<lake>/<table>/date=YYYY-MM-DD/<name>.parquet``. Every writer (the Spark job, the
alert engine) writes whole files atomically (temp file, then rename) with names derived from
the batch, so a replayed batch replaces its own file with the same rows. Rows carry a
``version`` (the writer's batch id, monotonic per table); a window still open is rewritten by a
later batch, and the views keep the newest version per key, so readers always see one row per
window. Readers never lock anything: DuckDB reads Parquet files, and `lagwatch.duckdb` holds
only views, so any number of read-only sessions can stay open while the pipeline writes.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

LABEL_COLUMNS: tuple[str, ...] = ("broker", "topic", "partition", "group_id", "client_id")


class TimeLagMethod(StrEnum):
    """How `lag_1m.time_lag_s` was obtained (`time_lag_method`); a group's maximum says the
    weakest of its partitions' (`group_status.max_time_lag_method`)."""

    #: Lag 0: 0 s.
    CAUGHT_UP = "caught_up"
    #: When the log end passed the committed offset, interpolated from the log-end history.
    INTERPOLATED = "interpolated"
    #: Not interpolated (history too short or not reaching back): at least the age of the oldest
    #: evidence that the record at the committed offset existed: its commit (first seen committed,
    #: or the commit log's time) or a log-end reading at or above it. The true time lag is larger.
    LOWER_BOUND = "commit_age_lower_bound"
    #: NULL: no evidence older than this observation (e.g. the first one).
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Table:
    """A lake table: its columns (DuckDB types), the key newest-wins applies to, its time column."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    time_column: str

    @property
    def column_names(self) -> list[str]:
        return [name for name, _ in self.columns]


_METRIC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster", "VARCHAR"),
    ("window_start", "TIMESTAMPTZ"),
    ("window_end", "TIMESTAMPTZ"),
    ("source", "VARCHAR"),
    ("metric", "VARCHAR"),
    ("kind", "VARCHAR"),
    ("broker", "VARCHAR"),
    ("topic", "VARCHAR"),
    ("partition", "INTEGER"),
    ("group_id", "VARCHAR"),
    ("client_id", "VARCHAR"),
    ("samples", "BIGINT"),
    ("min", "DOUBLE"),
    ("max", "DOUBLE"),
    ("avg", "DOUBLE"),
    ("first", "DOUBLE"),
    ("last", "DOUBLE"),
    #: Counters: increase per second over the window, reset-aware; gauges: NULL.
    ("rate_per_s", "DOUBLE"),
    ("version", "BIGINT"),
)
_METRIC_KEY = ("cluster", "window_start", "source", "metric", *LABEL_COLUMNS)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table("metrics_10s", _METRIC_COLUMNS, _METRIC_KEY, "window_start"),
        Table("metrics_1m", _METRIC_COLUMNS, _METRIC_KEY, "window_start"),
        Table(
            "lag_1m",
            (
                ("cluster", "VARCHAR"),
                ("window_start", "TIMESTAMPTZ"),
                ("window_end", "TIMESTAMPTZ"),
                ("group_id", "VARCHAR"),
                ("topic", "VARCHAR"),
                ("partition", "INTEGER"),
                ("committed_offset", "BIGINT"),
                ("end_offset", "BIGINT"),
                ("lag", "BIGINT"),
                ("lag_max", "BIGINT"),
                ("consume_rate", "DOUBLE"),  # records/s committed
                ("produce_rate", "DOUBLE"),  # records/s appended to the partition
                ("time_lag_s", "DOUBLE"),  # NULL when time_lag_method = 'unknown'
                ("time_lag_method", "VARCHAR"),  # TimeLagMethod: a lower bound is a floor, not the value
                #: Seconds to catch up: lag / (consume_rate - produce_rate); NULL when not catching
                #: up (the consumer is not gaining, or no rates yet), 0 when caught up.
                ("eta_s", "DOUBLE"),
                #: The ETA's basis: seconds of the lag window that consume_rate and produce_rate
                #: (so eta_s) are measured over (NULL in rows written before the column existed).
                ("rate_span_s", "DOUBLE"),
                #: Records between the log start and the committed offset (negative: that many
                #: deleted unread, status LOSS; NULL without a log start reading).
                ("retention_margin", "BIGINT"),
                #: Seconds until the topic's nearer retention limit deletes the committed offset
                #: (retention.ms − the committed record's age, or retention.bytes at the produce
                #: rate: docs/rollups.md); 0 once passed; NULL when retention cannot delete it
                #: (cleanup.policy=compact, no limit, caught up) or settings/age are unknown.
                ("retention_margin_s", "DOUBLE"),
                #: Which limit retention_margin_s is: 'time' (retention.ms) or 'size'
                #: (retention.bytes); NULL with no margin.
                ("retention_limit", "VARCHAR"),
                #: Why the margin is what it is, or why there is none (the nearer limit and its basis).
                ("retention_reason", "VARCHAR"),
                ("status", "VARCHAR"),  # lagwatch/vocabulary.py STATUSES
                ("reason", "VARCHAR"),
                ("rule", "VARCHAR"),  # the rule behind status (caught_up, stop, stall, …: spark_jobs/lag/rules.py)
                #: The group member owning the partition in the collector cycle of the newest
                #: observation (NULL: nobody owned it, or that cycle's describe did not answer).
                ("owner_member_id", "VARCHAR"),
                ("owner_client_id", "VARCHAR"),
                ("owner_host", "VARCHAR"),
                #: How often the owning member changed since the partition's previous minute's row,
                #: up to this row's observation (a rebalance moved it).
                ("owner_changes", "INTEGER"),
                #: Consumer (KIP-848) groups: the member the partition is assigned to but that does
                #: not own it yet, in the same cycle ("client on host"); NULL when reconciled.
                ("owner_pending", "VARCHAR"),
                #: The group's protocol as newest read (classic, consumer, share, streams;
                #: lagwatch/membership.py GROUP_TYPES): NULL when the broker never said.
                ("group_type", "VARCHAR"),
                ("version", "BIGINT"),
            ),
            ("cluster", "window_start", "group_id", "topic", "partition"),
            "window_start",
        ),
        Table(
            "group_status",
            (
                ("cluster", "VARCHAR"),
                ("group_id", "VARCHAR"),
                ("status", "VARCHAR"),
                ("reason", "VARCHAR"),
                ("rule", "VARCHAR"),
                ("total_lag", "BIGINT"),
                ("max_lag", "BIGINT"),
                ("max_time_lag_s", "DOUBLE"),
                #: TimeLagMethod of max_time_lag_s: commit_age_lower_bound when any partition's time
                #: lag is a lower bound (the group's maximum is then at least this), NULL in older rows.
                ("max_time_lag_method", "VARCHAR"),
                ("partitions", "INTEGER"),
                ("topics", "VARCHAR"),
                #: Group state (Stable, Empty, PreparingRebalance, …) and member count in the
                #: collector cycle of updated_at (NULL when that cycle's describe did not answer).
                ("group_state", "VARCHAR"),
                ("members", "INTEGER"),
                #: Rebalances within the lag window (lag.window_s): every one the commit log recorded
                #: (generation or group epoch increases); without the commit log, the collector cycles
                #: that saw one (the group rebalancing, its member count or a partition's owner changing).
                ("rebalances", "INTEGER"),
                #: Seconds of the lag window the group spent rebalancing (PreparingRebalance,
                #: CompletingRebalance, Assigning, Reconciling), from its state readings; NULL in older rows.
                ("rebalancing_s", "DOUBLE"),
                #: The rebalances within lag.rebalance_storm_window_s when they make a storm (at least
                #: lag.rebalance_storm_count), else 0; NULL in older rows.
                ("storm_rebalances", "INTEGER"),
                #: The group's protocol as newest read (classic, consumer, share, streams): NULL
                #: when the broker never said (tansu, or DescribeGroups off on a broker before 3.8).
                ("group_type", "VARCHAR"),
                #: A consumer (KIP-848) group's epoch as newest read from the commit log; NULL for
                #: classic groups and without the commit log.
                ("group_epoch", "INTEGER"),
                #: The 1-minute window this status belongs to (one row per group and minute).
                ("window_start", "TIMESTAMPTZ"),
                #: When the newest observation behind this status was measured (never in the future).
                ("updated_at", "TIMESTAMPTZ"),
                ("version", "BIGINT"),
            ),
            ("cluster", "group_id", "window_start"),
            "window_start",
        ),
        Table(
            "group_status_1h",
            (
                ("cluster", "VARCHAR"),
                ("group_id", "VARCHAR"),
                #: The UTC hour the row sums up (one row per group and hour, written once the hour has
                #: closed: its end older than the newest observation by spark.watermark_s).
                ("hour_start", "TIMESTAMPTZ"),
                #: The most severe status of the hour's minute rows (lagwatch/vocabulary.py STATUS_ORDER).
                ("worst_status", "VARCHAR"),
                #: status and reason of the hour's newest minute row.
                ("last_status", "VARCHAR"),
                ("last_reason", "VARCHAR"),
                #: The largest total_lag of the hour's minute rows, and the newest one's.
                ("max_total_lag", "BIGINT"),
                ("last_total_lag", "BIGINT"),
                #: The largest max_lag (one partition's lag) of the hour's minute rows.
                ("max_max_lag", "BIGINT"),
                #: The largest max_time_lag_s of the hour's minute rows (a floor where that row's was one).
                ("max_time_lag_s", "DOUBLE"),
                #: The largest minute row's rebalances: the most rebalances within one lag window
                #: (lag.window_s) ending in the hour. Not a count for the hour: the windows overlap,
                #: so a sum would count a rebalance once per minute row that saw it.
                ("rebalances", "INTEGER"),
                #: How many minute rows the hour has (60 when every minute had an observation).
                ("minutes", "INTEGER"),
                #: group_type of the hour's newest minute row.
                ("group_type", "VARCHAR"),
                #: The highest version among the hour's minute rows (rewritten minutes make it higher).
                ("version", "BIGINT"),
            ),
            ("cluster", "group_id", "hour_start"),
            "hour_start",
        ),
        Table(
            "lag_1h",
            (
                ("cluster", "VARCHAR"),
                ("group_id", "VARCHAR"),
                ("topic", "VARCHAR"),
                ("partition", "INTEGER"),
                #: The UTC hour the row sums up (one row per group-partition and hour, written once the
                #: hour has closed: its end older than the newest observation by spark.watermark_s).
                ("hour_start", "TIMESTAMPTZ"),
                #: The largest lag observed in the hour (the largest lag_max of its minute rows).
                ("max_lag", "BIGINT"),
                #: lag, committed_offset and end_offset of the hour's newest minute row.
                ("last_lag", "BIGINT"),
                ("last_committed_offset", "BIGINT"),
                ("last_end_offset", "BIGINT"),
                #: The largest time_lag_s of the hour's minute rows (NULL when none was known).
                ("max_time_lag_s", "DOUBLE"),
                #: The most severe status of the hour's minute rows (lagwatch/vocabulary.py STATUS_ORDER).
                ("worst_status", "VARCHAR"),
                #: How many minute rows the hour has (60 when every minute had an observation).
                ("minutes", "INTEGER"),
                #: The highest version among the hour's minute rows (rewritten minutes make it higher).
                ("version", "BIGINT"),
            ),
            ("cluster", "group_id", "topic", "partition", "hour_start"),
            "hour_start",
        ),
        Table(
            "dead_letters",
            (
                ("cluster", "VARCHAR"),
                ("received_at", "TIMESTAMPTZ"),
                ("source_topic", "VARCHAR"),
                ("source_partition", "INTEGER"),
                ("source_offset", "BIGINT"),
                ("raw", "VARCHAR"),
                ("error", "VARCHAR"),
                ("version", "BIGINT"),
            ),
            ("source_topic", "source_partition", "source_offset"),
            "received_at",
        ),
        Table(
            "alert_events",
            (
                ("cluster", "VARCHAR"),
                ("ts", "TIMESTAMPTZ"),
                ("event", "VARCHAR"),  # firing | repeat | resolved | delivered | failed | silenced
                ("alertname", "VARCHAR"),
                ("incident_key", "VARCHAR"),
                ("seq", "BIGINT"),
                ("severity", "VARCHAR"),
                ("labels", "VARCHAR"),  # JSON object
                ("value", "DOUBLE"),
                ("value_text", "VARCHAR"),  # the value in words where it is one: a status rule's status (STOP)
                ("receiver", "VARCHAR"),
                ("detail", "VARCHAR"),
                ("event_id", "VARCHAR"),
                ("version", "BIGINT"),
            ),
            ("event_id",),
            "ts",
        ),
        Table(
            "pipeline_progress",
            (
                ("cluster", "VARCHAR"),
                ("query", "VARCHAR"),
                ("batch_id", "BIGINT"),
                ("ts", "TIMESTAMPTZ"),
                ("input_rows", "BIGINT"),
                ("input_rows_per_s", "DOUBLE"),
                ("processed_rows_per_s", "DOUBLE"),
                ("batch_duration_ms", "BIGINT"),
                ("watermark", "TIMESTAMPTZ"),
                ("freshness_s", "DOUBLE"),
                ("version", "BIGINT"),
            ),
            ("query", "batch_id"),
            "ts",
        ),
    )
}

#: Sentinel partition that holds one empty file per table so a view always has a file to
#: read (DuckDB's read_parquet fails on a glob matching nothing). Retention never touches it.
SCHEMA_PARTITION = "date=1970-01-01"
SCHEMA_FILE = "_schema.parquet"
#: Rows per Parquet row group (the unit DuckDB skips by min/max statistics).
ROW_GROUP_ROWS = 65_536


def table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(f"unknown lake table {name!r}; tables: {', '.join(TABLES)}") from None


_ARROW_TYPES = {
    "VARCHAR": "string",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "DOUBLE": "float64",
    "TIMESTAMPTZ": "timestamp_utc",
}


def arrow_schema(name: str) -> pa.Schema:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "timestamp_utc": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([(col, types[_ARROW_TYPES[sql]]) for col, sql in table(name).columns])


def table_dir(lake: str | os.PathLike[str], name: str) -> Path:
    return Path(lake) / table(name).name


def ensure_lake(lake: str | os.PathLike[str]) -> None:
    """Create every table folder with its empty schema file (idempotent).

    A schema file from an older version (a table that has gained columns since) is rewritten:
    the views read every file by name, so that one empty file is what gives a new column to a
    lake whose data files all predate it (their rows read NULL there).
    """
    import pyarrow.parquet as pq

    for name in TABLES:
        schema_file = table_dir(lake, name) / SCHEMA_PARTITION / SCHEMA_FILE
        schema = arrow_schema(name)
        if not schema_file.exists() or pq.read_schema(schema_file).remove_metadata() != schema:
            schema_file.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(schema_file, schema.empty_table())


def _atomic_write(path: Path, data: pa.Table) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    # Small row groups: a compacted day file then carries min/max stats per ~20-30 minutes of
    # windows, so a "last hour" query reads a few row groups instead of a million-row one.
    pq.write_table(
        data,
        tmp,
        compression="zstd",
        row_group_size=ROW_GROUP_ROWS,
        use_dictionary=_dictionary_columns(data.schema),
    )
    os.replace(tmp, path)


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns worth dictionary encoding: all but the floating-point ones.

    Why: measured values (min, max, avg, rates) rarely repeat, so the writer would build each
    double column's dictionary only to overflow it: slower writes, larger files (bench/RECORDS.md).
    """
    import pyarrow as pa

    return [field.name for field in schema if not pa.types.is_floating(field.type)]


def write_rows(
    lake: str | os.PathLike[str],
    name: str,
    data: pa.Table,
    file_stem: str,
) -> list[Path]:
    """Write `data` into its date partitions as `<file_stem>.parquet`, atomically.

    The same `file_stem` (derived from a batch id) replaces the same files, which is what
    makes a replayed batch idempotent. Columns are cast to the table's schema, so a writer
    cannot drift from the contract unnoticed.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    spec = table(name)
    schema = arrow_schema(name)
    missing = [c for c in schema.names if c not in data.column_names]
    if missing:
        raise ValueError(f"{name}: rows lack columns {missing}")
    data = data.select(schema.names).cast(schema)
    if data.num_rows == 0:
        return []
    # The UTC day by a date cast (the schema's zone is UTC): strftime per row cost more than the write.
    days = data[spec.time_column].cast(pa.date32())
    distinct = sorted(d for d in pc.unique(days).to_pylist() if d is not None)
    whole_batch = len(distinct) == 1 and days.null_count == 0  # the usual case: no copy to filter
    written = []
    for day in distinct:
        part = table_dir(lake, name) / f"date={day.isoformat()}" / f"{file_stem}.parquet"
        part.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(part, data if whole_batch else data.filter(pc.equal(days, pa.scalar(day, pa.date32()))))
        written.append(part)
    return written


def _view_sql(lake: Path, spec: Table) -> str:
    glob = (lake / spec.name / "*" / "*.parquet").as_posix()
    source = f"read_parquet('{glob}', hive_partitioning = false, union_by_name = true)"
    key = ", ".join(spec.key)
    return (
        f"CREATE OR REPLACE VIEW {spec.name} AS SELECT * EXCLUDE (version) FROM {source} "
        f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY version DESC) = 1"
    )


def _since_macro_sql(lake: Path, spec: Table) -> str:
    """`<table>_since(start)`: rows with time >= start, newest version per key among them.

    Why: when the time column is not part of the key (pipeline_progress, alert_events,
    dead_letters), a time filter on the view cannot be pushed below the dedupe, so every
    read dedupes the whole retention. Filtering first is the same answer for these tables,
    whose rows are written once per key (a replay rewrites the same file).
    """
    glob = (lake / spec.name / "*" / "*.parquet").as_posix()
    source = f"read_parquet('{glob}', hive_partitioning = false, union_by_name = true)"
    key = ", ".join(spec.key)
    return (
        f"CREATE OR REPLACE MACRO {spec.name}_since(since) AS TABLE SELECT * EXCLUDE (version) FROM {source} "
        f"WHERE {spec.time_column} >= since "
        f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY version DESC) = 1"
    )


def _date_folders(lake: Path, spec: Table) -> list[str]:
    """The table's date folders as they are now (``date=YYYY-MM-DD``), the schema sentinel aside."""
    root = lake / spec.name
    if not root.is_dir():
        return []
    return sorted(
        entry.name
        for entry in os.scandir(root)
        if entry.is_dir() and entry.name.startswith("date=") and entry.name != SCHEMA_PARTITION
    )


def _range_files_sql(lake: Path, spec: Table) -> str:
    """SQL for the files a read of [since, until) lists: the schema file, and each date folder whose
    UTC day the range touches (the schema file again in place of one it does not touch).

    Why a fixed list with the schema file in every unused slot: a glob that matches nothing fails
    the read, and the list must stay one constant expression of the macro's arguments.
    """
    schema_file = f"'{(lake / spec.name / SCHEMA_PARTITION / SCHEMA_FILE).as_posix()}'"
    first = "CAST(timezone('UTC', CAST(since AS TIMESTAMPTZ)) AS DATE)"
    last = "CAST(timezone('UTC', CAST(until AS TIMESTAMPTZ)) AS DATE)"
    folders = [
        f"CASE WHEN DATE '{folder.removeprefix('date=')}' BETWEEN {first} AND {last} "
        f"THEN '{(lake / spec.name / folder / '*.parquet').as_posix()}' ELSE {schema_file} END"
        for folder in _date_folders(lake, spec)
    ]
    return f"[{', '.join([schema_file, *folders])}]"


def range_macro_statements(lake: str | os.PathLike[str], tables: Sequence[str]) -> list[str]:
    """CREATE TEMP MACRO statements for a session's ranged reads of `tables` (each one whose time
    column is in its key):

    - ``<table>_between(since, until)``: what the view shows with the time column in [since, until),
    - ``<table>_versions(since, until)``: the same rows as stored, every version and copy (a file
      being compacted is read beside its merged copy), with `version`: for a reader that finds the
      newest rows it needs more cheaply than by deduplicating the whole range.

    Why: a view lists every file of its table, and reading all their schemas (union_by_name) is the
    first cost of every statement on a fresh connection: the whole retention's footers for a
    last-hour page.
    These read only the date folders of the range's UTC days (a row's folder is its time column's
    UTC day: `write_rows`), so a short range costs the footers of a day or two. The time column is
    in the key, so the range filter below the dedupe keeps every version of a key or none.

    Why temporary and per session: the folders are listed when the statements are made, so a
    session made before midnight UTC does not see the next day's folder; a session lives for one
    page's queries.
    """
    root = Path(lake).resolve()
    statements = []
    for spec in map(table, tables):
        if spec.time_column not in spec.key:
            raise ValueError(f"{spec.name}: its time column {spec.time_column!r} is not in its key")
        source = f"read_parquet({_range_files_sql(root, spec)}, hive_partitioning = false, union_by_name = true)"
        in_range = f"{spec.time_column} >= since AND {spec.time_column} < until"
        newest = f"row_number() OVER (PARTITION BY {', '.join(spec.key)} ORDER BY version DESC) = 1"
        statements += [
            f"CREATE OR REPLACE TEMP MACRO {spec.name}_between(since, until) AS TABLE "
            f"SELECT * EXCLUDE (version) FROM {source} WHERE {in_range} QUALIFY {newest}",
            f"CREATE OR REPLACE TEMP MACRO {spec.name}_versions(since, until) AS TABLE "
            f"SELECT * FROM {source} WHERE {in_range}",
        ]
    return statements


def view_statements(lake: str | os.PathLike[str]) -> list[str]:
    """CREATE VIEW statements (newest version per key wins) for every table, plus a
    `<table>_since(start)` macro for tables whose key lacks the time column."""
    root = Path(lake).resolve()
    views = [_view_sql(root, spec) for spec in TABLES.values()]
    return views + [_since_macro_sql(root, s) for s in TABLES.values() if s.time_column not in s.key]


def write_views_file(lake: str | os.PathLike[str], duckdb_path: str | os.PathLike[str]) -> Path:
    """(Re)build `lagwatch.duckdb`: views only, swapped in atomically so open readers keep theirs."""
    import duckdb

    ensure_lake(lake)
    target = Path(duckdb_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    con = duckdb.connect(str(tmp))
    try:
        con.execute("SET TimeZone = 'UTC'")
        for statement in view_statements(lake):
            con.execute(statement)
    finally:
        con.close()
    os.replace(tmp, target)
    return target


def connect_readonly(lake: str | os.PathLike[str], duckdb_path: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """A read-only DuckDB session over the lake's views; creates the views file if missing.

    The session time zone is UTC so timestamps are never shifted by the host's zone.
    """
    import duckdb

    path = Path(duckdb_path)
    if not path.exists():
        write_views_file(lake, path)
    con = duckdb.connect(str(path), read_only=True)
    con.execute("SET TimeZone = 'UTC'")
    return con


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def written_columns(name: str) -> tuple[str, ...]:
    """The columns a writer supplies for a table: every declared one but `version` (stamped from the batch)."""
    return tuple(column for column in TABLES[name].column_names if column != "version")


#: The column that says why a value column holds its value: an alert on the value renders it as
#: {reason} (alerts/evaluate.py), so a page says which rule or limit is behind the number.
REASON_COLUMNS: dict[tuple[str, str], str] = {
    ("lag_1m", "status"): "reason",
    ("group_status", "status"): "reason",
    ("group_status", "storm_rebalances"): "reason",  # the reason names the storm
    ("lag_1m", "retention_margin_s"): "retention_reason",
}


def row_columns(name: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """Rows keyed by column name → one tuple of values per written column (:func:`written_columns`), in order.

    Strict, unlike :func:`rows_to_arrow`: a row lacking a declared column, or carrying one the
    table does not declare, raises ValueError naming the table and the column, so a column added
    to the contract but forgotten where rows are built fails at once instead of landing as NULL.
    """
    names = written_columns(name)
    values_of = itemgetter(*names)  # one C call per row, not one per cell
    try:
        values = [values_of(row) for row in rows]
    except KeyError as missing:
        raise ValueError(f"lake table {name!r}: a row lacks declared column {missing.args[0]!r}") from None
    undeclared = {key for row in rows if len(row) != len(names) for key in row} - set(names)
    if undeclared:
        raise ValueError(f"lake table {name!r}: a row has undeclared column(s) {sorted(undeclared)}")
    if not values:
        return {column: () for column in names}
    return dict(zip(names, zip(*values, strict=True), strict=True))


def rows_to_arrow(name: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Build a table's Arrow data from dict rows (missing columns become NULL)."""
    import pyarrow as pa

    schema = arrow_schema(name)
    return pa.Table.from_pylist([{c: row.get(c) for c in schema.names} for row in rows], schema=schema)
