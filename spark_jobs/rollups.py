"""The job's single stateful operator: metric windows (10 s, 1 min) and lag analytics in one pass.

Why one operator: Spark allows only one ``applyInPandasWithState`` per streaming query
("Multiple applyInPandasWithStates are not supported"), and a second query would read and parse
the samples topic a second time. So every sample is routed once through one shuffle:

- each sample goes to its metric series' bucket (``windows.py`` state, one per window size);
- a lag sample (admin `committed_offset` / `consumer_lag` with a group) goes *also* to its
  group's bucket (``lag.py`` state) — an ``explode`` of a one- or two-element array, not a
  union, so the source is scanned once;
- a record that failed parsing (input from ``parse.parse_records``: `error` set) goes to a
  bucket by its offset and comes out unchanged as a `dead_letters` row, touching no state. Its
  event time is NULL, which leaves the watermark (the maximum event time) alone.

The output is one DataFrame whose ``table`` column names the lake table of each row and whose
other columns are the union of those tables' columns (all but `version`). In foreachBatch,
:func:`table_rows` selects one table's rows and columns:

    out = rollups(parsed, watermark_s=30, lag_config=config.lag)
    def write(batch, batch_id):
        batch.persist()
        for name in ROLLUP_TABLES:
            lake_write(name, table_rows(batch, name), batch_id)
        batch.unpersist()

Rows are emitted in append mode: a window (or group status) that is still open appears again
in every batch that changes it, and the lake keeps the newest version per key.

Duplicates: a sample whose ts is not newer than the newest one already seen for its metric
series (or, for lag, its group-partition) is dropped in the state, so a retried produce never
counts twice, without a separate dropDuplicates operator.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from lagwatch.config import LagConfig
from lagwatch.lake import TABLES
from spark_jobs import lag, windows
from spark_jobs.schema import DEAD_LETTER_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Fixed for the life of a checkpoint (the state is keyed by bucket). Each bucket is one Python
#: call per micro-batch doing vectorised work for all its series/groups.
STATE_BUCKETS = 16
WINDOW_TABLES = {"10 seconds": "metrics_10s", "1 minute": "metrics_1m"}
ROLLUP_TABLES: tuple[str, ...] = ("metrics_10s", "metrics_1m", "lag_1m", "group_status", "dead_letters")
_SPARK_TYPES = {
    "VARCHAR": "string",
    "TIMESTAMPTZ": "timestamp",
    "INTEGER": "int",
    "BIGINT": "bigint",
    "DOUBLE": "double",
}
_PANDAS_NULLS = {
    "string": None,
    "int": "Int32",
    "bigint": "Int64",
    "double": "float64",
    "timestamp": "datetime64[ns, UTC]",
}


def _output_columns() -> dict[str, str]:
    """table + every column of the four tables except version, in first-seen order."""
    columns = {"table": "string"}
    for name in ROLLUP_TABLES:
        for column, duck_type in TABLES[name].columns:
            if column != "version":
                columns.setdefault(column, _SPARK_TYPES[duck_type])
    return columns


OUTPUT_COLUMNS = _output_columns()
OUTPUT_DDL = ", ".join(f"`{name}` {kind}" for name, kind in OUTPUT_COLUMNS.items())
STATE_DDL = "blob binary"


def rollups(
    parsed: DataFrame,
    watermark_s: float,
    lag_config: LagConfig | None,
    sizes: Sequence[str] = tuple(WINDOW_TABLES),
) -> DataFrame:
    """Streaming rows for metrics_10s, metrics_1m (per ``sizes``), with a lag_config lag_1m and group_status,
    and dead_letters when ``parsed`` comes from ``parse.parse_records`` (has an `error` column)."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    size_ms = {WINDOW_TABLES[size]: windows.window_millis(size) for size in sizes}
    watermarked = parsed.withWatermark("event_time", f"{int(watermark_s * 1000)} milliseconds")
    sid = windows.series_id_column()
    routes = []
    if size_ms:
        routes.append(
            (F.lit(True), F.struct(F.lit("metric").alias("role"), F.pmod(sid, F.lit(STATE_BUCKETS)).alias("b")))
        )
    if lag_config is not None:
        group_bucket = F.pmod(F.xxhash64("cluster", "group_id"), F.lit(STATE_BUCKETS))
        routes.append((lag.is_lag_sample(), F.struct(F.lit("lag").alias("role"), group_bucket.alias("b"))))
    if not routes:
        raise ValueError("rollups needs at least one window size or a lag_config")
    dead_columns = _dead_letter_inputs(parsed.columns)
    if "error" in parsed.columns:
        valid = F.col("error").isNull()
        routes = [(valid & cond, route) for cond, route in routes]
        dead_bucket = F.pmod(F.col("source_offset"), F.lit(STATE_BUCKETS)).cast("int")
        routes.append((~valid, F.struct(F.lit("dead").alias("role"), dead_bucket.alias("b"))))
    targets = F.filter(F.array(*[F.when(cond, route) for cond, route in routes]), lambda r: r.isNotNull())
    routed = watermarked.select(
        # event_time carries the watermark metadata: without it in the operator's input, Spark
        # tells the state function there is no watermark.
        F.explode(targets).alias("route"),
        sid.alias("sid"),
        F.xxhash64("cluster", "group_id", "topic", "partition").alias("pkey"),  # lag pairing key
        "ts",
        "event_time",
        "value",
        *windows.SERIES_COLUMNS,
        *dead_columns,
    ).select(F.col("route.role").alias("role"), F.col("route.b").alias("bucket"), "*")
    return (
        routed.drop("route")
        .groupBy("bucket")
        .applyInPandasWithState(
            partial(_rollup_bucket, size_ms=size_ms, lag_config=lag_config),
            outputStructType=OUTPUT_DDL,
            stateStructType=STATE_DDL,
            outputMode="append",
            timeoutConf=GroupStateTimeout.NoTimeout,
        )
    )


#: Dead-letter columns of the operator's input and their Spark types (the lake's, except
#: received_at, which travels as epoch ms: the form assemble() turns back into a UTC timestamp).
DEAD_LETTER_INPUTS = {
    name: "bigint" if name == "received_at" else _SPARK_TYPES[dict(TABLES["dead_letters"].columns)[name]]
    for name in DEAD_LETTER_COLUMNS
}


def _dead_letter_inputs(columns: Sequence[str]) -> list[Any]:
    """The dead-letter columns the operator needs (NULL when the input has only valid samples)."""
    from pyspark.sql import functions as F

    if "error" not in columns:
        return [F.lit(None).cast(kind).alias(name) for name, kind in DEAD_LETTER_INPUTS.items()]
    return [
        F.unix_millis("received_at").alias("received_at"),
        *[F.col(name) for name in DEAD_LETTER_INPUTS if name != "received_at"],
    ]


def table_rows(batch: DataFrame, table: str) -> DataFrame:
    """One lake table's rows and columns (all but version) from a micro-batch of :func:`rollups`."""
    if table not in ROLLUP_TABLES:
        raise ValueError(f"unknown rollup table {table!r}; tables: {', '.join(ROLLUP_TABLES)}")
    columns = [name for name in TABLES[table].column_names if name != "version"]
    return batch.where(batch["table"] == table).select(*columns)


def _rollup_bucket(
    key: tuple, batches: Iterator[pd.DataFrame], state: Any, size_ms: dict[str, int], lag_config: LagConfig | None
) -> Iterator[pd.DataFrame]:
    """applyInPandasWithState function: one bucket's metric series and groups, one batch."""
    frames = [frame for frame in batches if len(frame)]
    if not frames:
        return
    batch = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    saved: dict[str, bytes] = pickle.loads(state.get[0]) if state.exists else {}
    watermark_ms = state.getCurrentWatermarkMs()
    parts: list[tuple[str, windows.Columns]] = []
    metric_samples = batch[batch["role"] == "metric"]
    for table, millis in size_ms.items():
        if metric_samples.empty:
            break
        series, open_windows = (
            windows.decode_state(saved[table]) if table in saved else (windows.empty_series(), windows.empty_windows())
        )
        rows, series, open_windows = windows.update_windows(metric_samples, series, open_windows, millis, watermark_ms)
        saved[table] = windows.encode_state(series, open_windows)
        parts.append((table, rows))
    dead = batch[batch["role"] == "dead"]
    if not dead.empty:
        parts.append(("dead_letters", {name: dead[name].to_numpy() for name in ("cluster", *DEAD_LETTER_INPUTS)}))
    lag_samples = batch[batch["role"] == "lag"]
    if lag_config is not None and not lag_samples.empty:
        groups = lag.decode_groups(saved["lag"]) if "lag" in saved else {}
        partition_rows, group_rows = lag.update_lag(lag_samples, groups, lag_config, watermark_ms)
        saved["lag"] = lag.encode_groups(groups)
        parts += [("lag_1m", partition_rows), ("group_status", group_rows)]
    state.update((pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL),))
    parts = [(table, columns) for table, columns in parts if columns]
    if parts:
        yield assemble(parts)


def assemble(parts: list[tuple[str, windows.Columns]]) -> pd.DataFrame:
    """One output frame from every table's column arrays, typed per OUTPUT_COLUMNS.

    A column a table lacks is a typed null block. Built column by column with numpy (no
    per-table DataFrames, no pandas concat: those cost more than the aggregation itself).
    Times arrive as epoch ms and leave as UTC timestamps.
    """
    sizes = [len(next(iter(columns.values()))) for _, columns in parts]
    frame: dict[str, Any] = {}
    for name, kind in OUTPUT_COLUMNS.items():
        pieces = [(columns.get(name), size) for (_, columns), size in zip(parts, sizes, strict=True)]
        if name == "table":
            tables = [table for table, _ in parts]
            frame[name] = np.concatenate([np.full(n, t, object) for t, n in zip(tables, sizes, strict=True)])
        elif kind == "string":
            frame[name] = np.concatenate([np.full(n, None, object) if p is None else p for p, n in pieces])
        elif kind == "double":
            frame[name] = np.concatenate([_floats(p, n) for p, n in pieces])
        else:
            values, mask = _integers(pieces)
            if kind == "timestamp":
                stamps = values.astype("datetime64[ms]").astype("datetime64[ns]")
                stamps[mask] = np.datetime64("NaT")
                frame[name] = pd.DatetimeIndex(stamps).tz_localize("UTC")
            else:
                frame[name] = pd.arrays.IntegerArray(values.astype(np.int32 if kind == "int" else np.int64), mask)
    return pd.DataFrame(frame)


def _floats(piece: np.ndarray | None, size: int) -> np.ndarray:
    """A double column piece; None (object arrays) and missing columns become NaN, i.e. NULL."""
    if piece is None:
        return np.full(size, np.nan)
    if piece.dtype == object:
        return np.array([np.nan if v is None else v for v in piece], dtype=np.float64)
    return piece.astype(np.float64, copy=False)


def _integers(pieces: list[tuple[np.ndarray | None, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Integer column pieces (int, float with NaN, or object with None) → int64 values + null mask."""
    values, masks = [], []
    for piece, size in pieces:
        if piece is None:
            mask = np.ones(size, bool)
            piece = np.zeros(size, np.int64)
        elif piece.dtype == object:
            mask = np.array([v is None for v in piece], dtype=bool)
            piece = np.where(mask, 0, piece)
        else:
            mask = np.isnan(piece) if piece.dtype.kind == "f" else np.zeros(size, bool)
        values.append(np.where(mask, 0, piece).astype(np.int64))
        masks.append(mask)
    return np.concatenate(values), np.concatenate(masks)
