"""The foreachBatch lake writer: atomic files named by batch id, so a replayed batch changes nothing."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from lagwatch import lake as lakelib
from spark_jobs.lake_sink import LakeWriter, rows_of_table, whole_batch

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
    writer = LakeWriter(lake, "dead_letters", {"dead_letters": whole_batch})

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


def test_one_batch_split_into_tables_by_its_table_column(spark: Any, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lakelib.ensure_lake(lake)
    frame = _dead_letters(spark, range(0, 4), "x").selectExpr(
        "if(source_offset < 1, 'pipeline_progress', 'dead_letters') as table",
        "*",
        "'q' as query",
        "source_offset as batch_id",
        "received_at as ts",
        "1L as input_rows",
        "cast(null as double) as input_rows_per_s",
        "cast(null as double) as processed_rows_per_s",
        "cast(null as bigint) as batch_duration_ms",
        "cast(null as timestamp) as watermark",
        "cast(null as double) as freshness_s",
    )
    writer = LakeWriter(lake, "split", {t: rows_of_table(t) for t in ("dead_letters", "pipeline_progress")})
    writer(frame, 7)
    dead = pq.read_table(lake / "dead_letters" / "date=2026-06-01" / "b000000000007-split.parquet")
    progress = pq.read_table(lake / "pipeline_progress" / "date=2026-06-01" / "b000000000007-split.parquet")
    assert sorted(dead["source_offset"].to_pylist()) == [1, 2, 3]
    assert set(dead["version"].to_pylist()) == {7}
    assert progress["batch_id"].to_pylist() == [0]
