"""Compaction and retention on real Parquet files, read back through the real DuckDB views."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from lagwatch import lake as lakelib
from lagwatch.config import LakeConfig
from lagwatch.lake_maintenance import TOMBSTONES_FILE, maintain_lake
from spark_jobs.lake_sink import write_batch

DAY = dt.datetime.now(dt.UTC).replace(hour=12, minute=0, second=0, microsecond=0)


def _progress_rows(batch_id: int, day: dt.datetime, rows: int = 3) -> object:
    """pipeline_progress rows; key (query, batch_id) so every batch adds new keys, plus one rewritten key."""
    data = [
        {"cluster": "c", "query": "q", "batch_id": batch_id * 10 + i, "ts": day, "input_rows": batch_id}
        for i in range(rows)
    ]
    data.append({"cluster": "c", "query": "open", "batch_id": 0, "ts": day, "input_rows": batch_id})
    return lakelib.rows_to_arrow("pipeline_progress", data)


def _files(lake: Path, day: dt.datetime) -> list[Path]:
    return sorted((lake / "pipeline_progress" / f"date={day:%Y-%m-%d}").glob("*.parquet"))


def _view(lake: Path, duckdb_path: Path, sql: str) -> list[tuple]:
    con = lakelib.connect_readonly(lake, duckdb_path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_compaction_bounds_files_keeps_newest_and_waits_for_grace(tmp_path: Path) -> None:
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    lakelib.ensure_lake(lake)
    for batch_id in range(1, 9):
        write_batch(lake, "pipeline_progress", _progress_rows(batch_id, DAY), batch_id, "q")
    before = _view(lake, views, "select count(*), max(input_rows) filter (where query = 'open') from pipeline_progress")
    config = LakeConfig(path=str(lake), compact_after_files=4, grace_period_s=600)
    now = time.time()

    report = maintain_lake(lake, config, now=now)
    assert report.compacted == {f"pipeline_progress/date={DAY:%Y-%m-%d}": 8}
    assert len(_files(lake, DAY)) == 9, "replaced files stay on disk during the grace period"
    assert (lake / "pipeline_progress" / TOMBSTONES_FILE).exists()
    assert (
        _view(lake, views, "select count(*), max(input_rows) filter (where query = 'open') from pipeline_progress")
        == before
    )

    maintain_lake(lake, config, now=now + 599)
    assert len(_files(lake, DAY)) == 9, "not yet past the grace period"
    maintain_lake(lake, config, now=now + 601)
    remaining = _files(lake, DAY)
    assert len(remaining) == 1 and remaining[0].name.startswith("c")
    assert (
        _view(lake, views, "select count(*), max(input_rows) filter (where query = 'open') from pipeline_progress")
        == before
    )
    assert before == [(8 * 3 + 1, 8)], "24 distinct batches plus the one open key at its newest version"
    assert (lake / "pipeline_progress" / lakelib.SCHEMA_PARTITION / lakelib.SCHEMA_FILE).exists()


def test_compaction_is_tiered_so_a_day_is_not_rewritten_every_pass(tmp_path: Path) -> None:
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    lakelib.ensure_lake(lake)
    config = LakeConfig(path=str(lake), compact_after_files=3, grace_period_s=0)
    now, batch_id = time.time(), 0
    for rounds in range(1, 5):  # each round: four batch files (> 3) become one compacted file
        for _ in range(4):
            batch_id += 1
            write_batch(lake, "pipeline_progress", _progress_rows(batch_id, DAY), batch_id, "q")
        compacted_before = {f for f in _files(lake, DAY) if f.name.startswith("c")}
        report = maintain_lake(lake, config, now=now + rounds)
        assert report.compacted == {f"pipeline_progress/date={DAY:%Y-%m-%d}": 4}, "only the batch files merged"
        assert compacted_before < set(_files(lake, DAY)), "earlier compacted files were left as they were"
    assert sum(f.name.startswith("c") for f in _files(lake, DAY)) == 4

    report = maintain_lake(lake, config, now=now + 10)  # deletes the merged batch files, then: 4 c-files > 3
    assert report.compacted == {f"pipeline_progress/date={DAY:%Y-%m-%d}": 4}, "the compacted tier merged"
    maintain_lake(lake, config, now=now + 11)
    assert len(_files(lake, DAY)) == 1
    count, newest_open = _view(
        lake, views, "select count(*), max(input_rows) filter (where query = 'open') from pipeline_progress"
    )[0]
    assert (count, newest_open) == (16 * 3 + 1, 16), "every key once, the open key at its newest version"


def test_retention_drops_partitions_older_than_the_table_retention(tmp_path: Path) -> None:
    lake, views = tmp_path / "lake", tmp_path / "lagwatch.duckdb"
    lakelib.ensure_lake(lake)
    today = dt.datetime.now(dt.UTC)
    old = today - dt.timedelta(days=10)
    write_batch(lake, "pipeline_progress", _progress_rows(1, old), 1, "q")
    write_batch(lake, "pipeline_progress", _progress_rows(2, today), 2, "q")
    write_batch(
        lake,
        "dead_letters",
        lakelib.rows_to_arrow(
            "dead_letters",
            [{"cluster": "c", "received_at": old, "source_topic": "t", "source_partition": 0, "source_offset": 1}],
        ),
        1,
        "q",
    )
    config = LakeConfig(
        path=str(lake), retention_days={"pipeline_progress": 5}, default_retention_days=30, grace_period_s=0
    )

    report = maintain_lake(lake, config)
    maintain_lake(lake, config)  # second pass deletes what the first tombstoned (grace 0)
    assert report.expired == [f"pipeline_progress/date={old:%Y-%m-%d}"]
    assert not (lake / "pipeline_progress" / f"date={old:%Y-%m-%d}").exists()
    assert _files(lake, today), "today's partition is kept"
    assert (lake / "dead_letters" / f"date={old:%Y-%m-%d}").exists(), "dead_letters keeps the 30-day default"
    assert (lake / "pipeline_progress" / lakelib.SCHEMA_PARTITION / lakelib.SCHEMA_FILE).exists(), "sentinel kept"
    assert _view(lake, views, "select min(input_rows) from pipeline_progress") == [(2,)]
