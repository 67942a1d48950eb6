"""The foreachBatch lake writer: atomic files named by batch id, so a replayed batch changes nothing."""

from __future__ import annotations

import datetime as dt
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from lagwatch import lake as lakelib
from spark_jobs.lake_sink import LakeWriter
from spark_jobs.rollups import OUTPUT_DDL, ROLLUP_TABLES, decode_table, encode_parts

WHEN = dt.datetime(2026, 6, 1, 10, 0, tzinfo=dt.UTC)


def _dead_letters(spark: Any, offsets: range, error: str) -> Any:
    rows = [("c", WHEN, "samples", 0, o, f"raw {o}", error) for o in offsets]
    schema = (
        "cluster string, received_at timestamp, source_topic string, source_partition int, "
        "source_offset bigint, raw string, error string"
    )
    return spark.createDataFrame(rows, schema)


def _lake_rows(lake: Path, duckdb_path: Path) -> list[tuple]:
    con = lakelib.connect_readonly(lake, duckdb_path)
    try:
        return con.execute("select source_offset, error, received_at from dead_letters order by 1").fetchall()
    finally:
        con.close()


def test_replayed_batch_leaves_the_same_rows_and_newer_versions_win(spark: Any, tmp_path: Path) -> None:
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    lakelib.ensure_lake(lake)
    writer = LakeWriter(lake, "dead_letters", {"dead_letters": lambda data: data})

    writer(_dead_letters(spark, range(0, 5), "first"), 0)
    once = _lake_rows(lake, views)
    writer(_dead_letters(spark, range(0, 5), "first"), 0)  # Spark replays batch 0 after a crash
    assert _lake_rows(lake, views) == once
    assert len(once) == 5 and once[0][2] == WHEN, "timestamps come back as the same UTC instant"
    files = list((lake / "dead_letters" / "date=2026-06-01").glob("*.parquet"))
    assert [f.name for f in files] == ["b000000000000-dead_letters.parquet"]

    writer(_dead_letters(spark, range(3, 8), "second"), 1)
    after = dict((offset, error) for offset, error, _ in _lake_rows(lake, views))
    assert after == {
        0: "first",
        1: "first",
        2: "first",
        3: "second",
        4: "second",
        5: "second",
        6: "second",
        7: "second",
    }


def test_rollups_batch_split_into_tables_from_its_arrow_blobs(spark: Any, tmp_path: Path) -> None:
    """The job's writer: each (table, Arrow blob) row of the operator lands in its own table."""
    lake = tmp_path / "lake"
    lakelib.ensure_lake(lake)
    epoch_ms = int(WHEN.timestamp() * 1000)
    dead = {
        "cluster": np.array(["c"] * 3, object),
        "received_at": np.array([epoch_ms] * 3),
        "source_topic": np.array(["samples"] * 3, object),
        "source_partition": np.array([0, 0, 0]),
        "source_offset": np.array([1, 2, 3]),
        "raw": np.array(["x", "y", "z"], object),
        "error": np.array(["not a JSON object"] * 3, object),
    }
    window = {
        "cluster": np.array(["c"], object),
        "window_start": np.array([epoch_ms]),
        "window_end": np.array([epoch_ms + 10_000]),
        "metric": np.array(["m"], object),
        "partition": np.array([np.nan]),
        "rate_per_s": np.array([np.nan]),
        "samples": np.array([2]),
    }
    frame = spark.createDataFrame(encode_parts([("dead_letters", dead), ("metrics_10s", window)]), OUTPUT_DDL)
    writer = LakeWriter(lake, "split", {t: partial(decode_table, table=t) for t in ROLLUP_TABLES})
    writer(frame, 7)
    day = "date=2026-06-01"
    dead_rows = pq.read_table(lake / "dead_letters" / day / "b000000000007-split.parquet").to_pylist()
    assert [(r["source_offset"], r["received_at"], r["version"]) for r in dead_rows] == [
        (o, WHEN, 7) for o in (1, 2, 3)
    ]
    (row,) = pq.read_table(lake / "metrics_10s" / day / "b000000000007-split.parquet").to_pylist()
    assert (row["window_end"] - row["window_start"], row["samples"]) == (dt.timedelta(seconds=10), 2)
    assert (row["partition"], row["rate_per_s"], row["broker"]) == (None, None, None), "NaN and absent are NULL"
    assert not (lake / "lag_1m" / day).exists(), "a table with no rows writes no file"
