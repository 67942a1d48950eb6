"""The job's single stateful operator: metric windows (10 s, 1 min) and lag analytics in one pass.

Why one operator: Spark allows only one ``applyInPandasWithState`` per streaming query
("Multiple applyInPandasWithStates are not supported"), and a second query would read and parse
the samples topic a second time. So every record is routed once through one exchange, by
``route.py``, packed per state bucket (``packed.py`` says why):

- each sample goes to its metric series' bucket (``windows.py`` state, one per window size);
- except a lag sample (admin `committed_offset` / `consumer_lag` with a group, or the group's
  `consumer_group_state` / `consumer_group_members`): it goes to its group's bucket (``lag/step.py``
  and ``lag/membership.py`` state), where its metric windows are kept as well. A lag series
  always carries its group, so it always lands in the same bucket, and each sample crosses
  the exchange once;
- a member sample (`partition_assigned`) goes to its group's bucket for the membership state
  only: it has no metric windows;
- a record that failed decoding (`error` set) goes to a bucket by its offset and comes out
  unchanged as a `dead_letters` row, touching no state. It has no event time, which leaves
  the watermark (the maximum event time) alone;
- with lag analytics, the admin collector's `up` sample also comes to every bucket as a CLUSTER
  copy: it is folded into the bucket's reachability state (``lag/reachability.py``), and a failed
  admin cycle turns the bucket's groups of that cluster ERR (``lag/unreachable.py``), even in a
  batch that carries no lag sample at all (the cluster being down, none comes);
- with lag analytics, a topic's retention settings also come to every bucket as TOPIC copies:
  they are kept in the bucket's topic settings (``lag/retention.py``), by which each partition's
  retention margin is judged;
- with lag analytics, a broker event sample (under-replicated partitions, ISR shrinks, …) also
  comes to every bucket as a BROKER copy: it is folded into the bucket's broker event state
  (``lag/broker_events.py``) before the lag update, and the reason of a group_status row that is
  not OK names its cluster's broker events of the lag window.

The output has one row per bucket and table: the table's name and its rows as an Arrow IPC
stream (:func:`encode_parts`). In foreachBatch, :func:`decode_table` opens one table's rows:

    out = rollups(routed_samples, watermark_s=30, lag_config=config.lag)
    def write(batch, batch_id):
        data = batch.toArrow()
        for name in ROLLUP_TABLES:
            lake_write(name, decode_table(data, name), batch_id)

Rows are emitted in append mode: a window (or group status) that is still open appears again
in every batch that changes it, and the lake keeps the newest version per key.

Duplicates: a sample whose ts is not newer than the newest one already seen for its metric
series (or, for lag, its group-partition) is dropped in the state, so a retried produce never
counts twice, without a separate dropDuplicates operator.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator, Mapping
from functools import cache, partial
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from lagwatch import lake as lakelib
from lagwatch.config import LagConfig
from lagwatch.gc_pause import freeze_startup_objects
from spark_jobs import packed, route, windows
from spark_jobs.lag import broker_events, membership, reachability, retention, step
from spark_jobs.lag.rules import Outage
from spark_jobs.schema import DEAD_LETTER_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

WINDOW_TABLES = {"10 seconds": "metrics_10s", "1 minute": "metrics_1m"}
ROLLUP_TABLES: tuple[str, ...] = ("metrics_10s", "metrics_1m", "lag_1m", "group_status", "dead_letters")
OUTPUT_DDL = "table string, arrow binary"
STATE_DDL = "blob binary"
T = TypeVar("T")
#: Tables without group-partition lag series when lag analytics run (docs/rollups.md says why).
PER_MINUTE_ONLY: frozenset[str] = frozenset({"metrics_10s"})
#: What windows.update_windows reads of a sample (selected before its sort: fewer columns to move).
METRIC_INPUTS: tuple[str, ...] = ("sid", "ts", "value", "series_key")


def rollups(
    routed: DataFrame,
    watermark_s: float,
    lag_config: LagConfig | None,
    cluster_lag: Mapping[str, Mapping[str, float]] | None = None,
) -> DataFrame:
    """Streaming rows for metrics_10s and metrics_1m, with a lag_config lag_1m and group_status,
    and dead_letters for records that failed decoding. ``cluster_lag``: each monitored cluster's
    threshold overrides by name (``[[clusters]] lag``), between LagConfig's defaults and
    ``[lag.group_thresholds]``.

    ``routed`` is a ``route.ROUTED_DDL`` frame, routed with lag routing exactly when lag_config
    is set: what the Kafka source yields with routing on, or ``route.routed`` over packed samples.
    """
    from pyspark.sql.streaming.state import GroupStateTimeout

    from spark_jobs.progress import observe_input_records

    size_ms = {table: windows.window_millis(size) for size, table in WINDOW_TABLES.items()}
    routed = observe_input_records(routed, "records")
    # event_time (each routed row's newest sample) carries the watermark: without it in the
    # operator's input, Spark tells the state function there is no watermark.
    watermarked = routed.withWatermark("event_time", f"{int(watermark_s * 1000)} milliseconds")
    return watermarked.groupBy("bucket").applyInPandasWithState(
        partial(
            rollup_bucket,
            size_ms=size_ms,
            delay_ms=int(watermark_s * 1000),
            lag_config=lag_config,
            cluster_lag=dict(cluster_lag or {}),
        ),
        outputStructType=OUTPUT_DDL,
        stateStructType=STATE_DDL,
        outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout,
    )


def _dead_letter_rows(texts: np.ndarray) -> windows.Columns:
    """dead_letters column arrays from the operator's `dead_letter` JSON strings."""
    records = [json.loads(text) for text in texts]
    return {
        name: np.array([record.get(name) for record in records], object) for name in ("cluster", *DEAD_LETTER_COLUMNS)
    }


def rollup_bucket(
    key: tuple,
    batches: Iterator[pd.DataFrame],
    state: Any,
    size_ms: dict[str, int],
    delay_ms: int,
    lag_config: LagConfig | None,
    cluster_lag: Mapping[str, Mapping[str, float]] | None = None,
) -> Iterator[pd.DataFrame]:
    """applyInPandasWithState function: one bucket's metric series and groups, one batch."""
    freeze_startup_objects()  # a worker's imports leave the collections PySpark runs after each task
    cells = [cell for frame in batches for cell in frame["samples"]]
    if not cells:
        return
    batch = packed.unpack(cells).to_pandas()
    saved: dict[str, bytes] = pickle.loads(state.get[0]) if state.exists else {}
    watermark_ms = state.getCurrentWatermarkMs()
    parts: list[tuple[str, windows.Columns]] = []
    roles = batch["role"].to_numpy()
    for table, millis in size_ms.items():
        metric_samples = batch.loc[_windowed(batch, roles, table), list(METRIC_INPUTS)]
        if metric_samples.empty:
            continue
        series, open_windows = (
            windows.decode_state(saved[table]) if table in saved else (windows.empty_series(), windows.empty_windows())
        )
        rows, series, open_windows = windows.update_windows(
            metric_samples, series, open_windows, millis, watermark_ms, delay_ms
        )
        saved[table] = windows.encode_state(series, open_windows)
        parts.append((table, rows))
    dead = batch["dead_letter"].to_numpy()[roles == route.DEAD]
    if len(dead):
        parts.append(("dead_letters", _dead_letter_rows(dead)))
    if lag_config is not None:
        parts += _lag_parts(saved, batch, roles, lag_config, watermark_ms, cluster_lag)
    state.update((pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL),))
    parts = [(table, columns) for table, columns in parts if columns]
    if parts:
        yield encode_parts(parts)


def _windowed(batch: pd.DataFrame, roles: np.ndarray, table: str) -> np.ndarray:
    """The rows a metrics table rolls up: every metric and lag sample, except that a group-partition's
    lag series (committed offset, lag, log start, size) skip the tables in PER_MINUTE_ONLY, since
    lag_1m keeps them per minute and a fleet has far more of them than of broker or topic series."""
    rows = (roles == route.METRIC) | (roles == route.LAG)
    if table in PER_MINUTE_ONLY:
        rows &= ~((roles == route.LAG) & (batch["pkey"].to_numpy() != 0))  # pkey: set for partition rows only
    return rows


def _lag_parts(
    saved: dict[str, bytes],
    batch: pd.DataFrame,
    roles: np.ndarray,
    lag_config: LagConfig,
    watermark_ms: int,
    cluster_lag: Mapping[str, Mapping[str, float]] | None,
) -> list[tuple[str, windows.Columns]]:
    """The batch's copies folded into the bucket's shared state (broker events, topic settings,
    reachability), then its lag and membership samples into the groups: lag_1m and group_status."""
    events = _fold_copies(
        saved,
        "broker_events",
        broker_events,
        broker_events.BrokerEvents,
        batch.loc[roles == route.BROKER, list(METRIC_INPUTS)],
        partial(broker_events.fold, keep_ms=2 * lag_config.window_ms),
    )
    settings = _fold_copies(
        saved,
        "topic_settings",
        retention,
        retention.TopicSettings,
        batch.loc[roles == route.TOPIC, list(METRIC_INPUTS)],
        retention.fold,
    )
    outages, unreachable_now = _fold_reachability(saved, batch, roles)
    lag_samples = batch[(roles == route.LAG) | (roles == route.MEMBER)]
    if lag_samples.empty and not outages:
        return []
    groups = step.decode_groups(saved["lag"]) if "lag" in saved else {}
    members = membership.decode(saved["membership"]) if "membership" in saved else {}
    partition_rows, group_rows = step.update_lag(
        lag_samples,
        groups,
        members,
        lag_config,
        watermark_ms,
        events,
        settings=settings,
        cluster_lag=cluster_lag,
        outages=outages,
        unreachable_clusters=unreachable_now,
    )
    saved["lag"], saved["membership"] = step.encode_groups(groups), membership.encode(members)
    return [("lag_1m", partition_rows), ("group_status", group_rows)]


def _fold_copies(
    saved: dict[str, bytes],
    key: str,
    codec: Any,
    empty: Callable[[], T],
    samples: pd.DataFrame,
    fold: Callable[[T, pd.DataFrame], None],
) -> T | None:
    """The bucket's state ``key`` (kept alike in every bucket from copies sent to all: broker
    events, topic settings) with the batch's copies folded in and saved; None when there is none.
    ``codec``: the state's module, with its ``encode`` and ``decode``."""
    if samples.empty and key not in saved:
        return None
    kept: T = codec.decode(saved[key]) if key in saved else empty()
    if not samples.empty:
        fold(kept, samples)
        saved[key] = codec.encode(kept)
    return kept


def _fold_reachability(
    saved: dict[str, bytes], batch: pd.DataFrame, roles: np.ndarray
) -> tuple[dict[str, Outage], set[str]]:
    """The batch's CLUSTER copies (admin `up`) into the bucket's reachability state: (the clusters
    whose newest admin cycle, read in this batch, failed; every cluster unreachable now)."""
    state = reachability.decode(saved["reachability"]) if "reachability" in saved else {}
    touched = reachability.fold(state, batch.loc[roles == route.CLUSTER, list(METRIC_INPUTS)])
    if touched:
        saved["reachability"] = reachability.encode(state)
    down = reachability.outages(state)
    return {name: outage for name, outage in down.items() if name in touched}, set(down)


def encode_parts(parts: list[tuple[str, windows.Columns]]) -> pd.DataFrame:
    """The operator's output: one row per table, its rows as one Arrow IPC stream (OUTPUT_DDL).

    Why not one Spark row per lake row: the five tables share no columns worth a union, and
    a union row of all their columns (43, most of them NULL) cost more to pass from the Python
    worker to the JVM and back to the driver's Arrow than the aggregation itself. A blob per
    table crosses both boundaries as a few large values; :func:`decode_table` opens it.
    The blobs are LZ4-compressed: fewer bytes to move shortens both the operator's stage and the
    driver's share of a batch (bench/RECORDS.md).
    """
    return pd.DataFrame(
        {
            "table": [table for table, _ in parts],
            "arrow": [packed.pack_bytes(to_arrow(t, c), compression="lz4") for t, c in parts],
        }
    )


def to_arrow(table: str, columns: windows.Columns) -> pa.Table:
    """One table's column arrays → Arrow with the lake's columns (all but version) and types.

    A column the part lacks is NULL; NaN and None are NULL; times arrive as epoch ms.
    """
    schema = output_schema(table)
    size = len(next(iter(columns.values())))
    return pa.Table.from_arrays([_arrow_column(columns.get(f.name), f.type, size) for f in schema], schema=schema)


def _arrow_column(values: np.ndarray | pa.Array | None, kind: pa.DataType, size: int) -> pa.Array:
    if values is None:
        return pa.nulls(size, kind)
    if isinstance(values, pa.Array):
        return values if values.type == kind else values.cast(kind)
    if pa.types.is_timestamp(kind):
        millis = pa.array(values, from_pandas=True).cast(pa.int64())
        return millis.cast(pa.timestamp("ms", tz="UTC")).cast(kind)
    return pa.array(values, type=kind, from_pandas=True)


@cache
def output_schema(table: str) -> pa.Schema:
    """The lake schema of a rollup table without `version` (the writer stamps the batch id)."""
    if table not in ROLLUP_TABLES:
        raise ValueError(f"unknown rollup table {table!r}; tables: {', '.join(ROLLUP_TABLES)}")
    schema = lakelib.arrow_schema(table)
    return schema.remove(schema.get_field_index("version"))


def decode_table(batch: pa.Table, table: str) -> pa.Table:
    """One lake table's rows (all columns but version) from a micro-batch of :func:`rollups`, as Arrow."""
    schema = output_schema(table)
    blobs = pc.filter(batch["arrow"], pc.equal(batch["table"], table)).to_pylist()
    tables = [pa.ipc.open_stream(blob).read_all() for blob in blobs]
    return pa.concat_tables(tables) if tables else schema.empty_table()
