"""Drive the Spark stages from files: parsed samples written as Parquet, one file per micro-batch.

No Kafka is needed to test windows and lag: the stages accept PARSED_SAMPLE_SCHEMA rows (packed), so a
file source with ``maxFilesPerTrigger=1`` replays exactly the micro-batches a test crafts, and
``trigger(availableNow=True)`` ends the query when the files are consumed.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lagwatch.samples import make_member_sample, make_sample
from spark_jobs.rollups import decode_table
from spark_jobs.schema import PARSED_SAMPLE_SCHEMA

_ARROW_TYPES = {
    "IntegerType()": pa.int32(),
    "LongType()": pa.int64(),
    "DoubleType()": pa.float64(),
    "TimestampType()": pa.timestamp("us", tz="UTC"),
}


def parsed_sample(ts_ms: int, metric: str, kind: str, value: float, **fields: Any) -> dict[str, Any]:
    """One PARSED_SAMPLE_SCHEMA row built by the product's own make_sample (deterministic id)."""
    labels = {"cluster": "test", "source": "jmx", "collector": "test"} | fields
    if "member_id" in labels or "host" in labels:
        sample = make_member_sample(ts=ts_ms, metric=metric, kind=kind, value=value, **labels)
    else:
        sample = make_sample(ts=ts_ms, metric=metric, kind=kind, value=value, **labels)
    row = {name: getattr(sample, name, None) for name in PARSED_SAMPLE_SCHEMA.fieldNames() if name != "event_time"}
    row["event_time"] = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.UTC)
    return row


def _arrow_schema() -> pa.Schema:
    return pa.schema(
        [pa.field(f.name, _ARROW_TYPES.get(repr(f.dataType), pa.string())) for f in PARSED_SAMPLE_SCHEMA.fields]
    )


def write_batches(directory: Path, batches: Sequence[Sequence[dict[str, Any]]]) -> Path:
    """One Parquet file per micro-batch, in order.

    Spark's file source orders new files by modification time, not by name, and files written
    within the same clock tick (coarse on some filesystems) may come in any order: each file
    gets its own mtime, one second apart.
    """
    directory.mkdir(parents=True, exist_ok=True)
    schema = _arrow_schema()
    first_mtime = int(time.time()) - len(batches)
    for index, rows in enumerate(batches):
        path = directory / f"batch-{index:04d}.parquet"
        pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), path)
        os.utime(path, (first_mtime + index, first_mtime + index))
    return directory


def run_query(
    spark: Any, source: Path, build: Callable[[Any], Any], checkpoint: Path, write: Callable[..., Any]
) -> None:
    """Run build(stream) over the files, one file per batch, each batch handed to `write` (a
    foreachBatch function) until the files are read; a failed query fails the test."""
    stream = spark.readStream.schema(PARSED_SAMPLE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    query = (
        build(stream)
        .writeStream.foreachBatch(write)
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    if query.exception():
        raise AssertionError(f"streaming query failed: {query.exception()}")


def run_stream(
    spark: Any, source: Path, build: Callable[[Any], Any], checkpoint: Path, tables: Sequence[str]
) -> dict[str, list[list[Any]]]:
    """run_query collecting, per table, each batch's rows.

    Each micro-batch is collected once as Arrow and split with ``rollups.decode_table``, as
    the job's writer does; rows come back as Spark Rows (UTC times without tzinfo, as collect()).
    """
    collected: dict[str, list[list[Any]]] = {table: [] for table in tables}

    def keep(batch: Any, batch_id: int) -> None:
        data = batch.toArrow()
        for table in tables:
            collected[table].append(spark.createDataFrame(decode_table(data, table)).collect())

    run_query(spark, source, build, checkpoint, keep)
    return collected


def rollups_plan(lag_config: Any) -> Callable[[Any], Any]:
    """The job's plan from parsed samples: pack, route, the rollups operator (30 s watermark)."""
    from spark_jobs.packed import PACKED_DDL, pack_batches
    from spark_jobs.rollups import rollups
    from spark_jobs.route import routed

    def build(stream: Any) -> Any:
        packed = stream.mapInArrow(pack_batches, PACKED_DDL)
        return rollups(routed(packed, None, lag_routing=lag_config is not None), 30, lag_config=lag_config)

    return build


def run_rollups(
    spark: Any, root: Path, batches: Sequence[Sequence[dict[str, Any]]], lag_config: Any, tables: Sequence[str]
) -> dict[str, list[list[Any]]]:
    """The job's rollups operator (30 s watermark) over `batches`, one micro-batch each."""
    source = write_batches(root / "samples", batches)
    return run_stream(spark, source, rollups_plan(lag_config), root / "checkpoint", tables)


def newest_by_key(batches: list[list[Any]], key: Callable[[Any], Any]) -> dict[Any, Any]:
    """What the lake shows: the newest version of every key."""
    newest: dict[Any, Any] = {}
    for rows in batches:
        for row in rows:
            newest[key(row)] = row
    return newest
