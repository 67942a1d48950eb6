"""`lagwatch stream` end to end: real tansu topic → real Spark job → real Parquet lake → DuckDB."""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from harness.processes import start_lagwatch
from lagwatch import lake as lakelib
from lagwatch.kafka import ensure_topic
from lagwatch.samples import Sample
from spark_jobs import job
from tests.spark_jobs.samples_io import gauge_samples, produce_samples, produce_values

START_MS = int(time.time() * 1000) - 600_000  # ten minutes ago: inside any retention, windows long closed


def _lake_query(config: Any, sql: str) -> list[tuple]:
    con = lakelib.connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _expected_windows(samples: list[Sample]) -> dict[tuple[str, int], tuple[int, float, float]]:
    """Recompute metrics_10s (samples, min, max) per broker and window from what was produced."""
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for s in {s.id: s for s in samples}.values():
        groups[(s.broker or "", s.ts - s.ts % 10_000)].append(s.value)
    return {key: (len(v), min(v), max(v)) for key, v in groups.items()}


def _lake_windows(config: Any) -> dict[tuple[str, int], tuple[int, float, float]]:
    rows = _lake_query(
        config,
        "select broker, epoch_ms(window_start), samples, min, max from metrics_10s "
        "where metric = 'under_replicated_partitions'",
    )
    return {(broker, start): (samples, lo, hi) for broker, start, samples, lo, hi in rows}


def test_malformed_records_go_to_dead_letters_and_an_open_reader_keeps_working(
    spark: Any, broker: Any, make_config: Any
) -> None:
    config = make_config(spark={"max_rows_per_batch": 40})
    topic = config.transport.samples_topic
    ensure_topic({"bootstrap.servers": broker.bootstrap_servers}, topic, 1)
    before, after = gauge_samples(60, START_MS), gauge_samples(60, START_MS + 60_000)
    produce_samples(broker.bootstrap_servers, topic, before)
    malformed = [b"{not json", b'{"v":1,"value":NaN}', json.dumps({**json.loads(before[0].to_json()), "v": 9}).encode()]
    produce_values(broker.bootstrap_servers, topic, [(b"bad", raw) for raw in malformed])
    produce_samples(broker.bootstrap_servers, topic, [*after, after[0], after[1]])  # two retried produces

    lake, views = config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path)
    reader = lakelib.connect_readonly(lake, views)  # an analyst's session, open for the whole run
    errors: list[BaseException] = []
    counts: list[int] = []
    running = threading.Event()
    running.set()

    def analyst() -> None:
        while running.is_set():
            try:
                counts.append(reader.cursor().execute("select count(*) from metrics_10s").fetchone()[0])
            except duckdb.Error as exc:
                errors.append(exc)
            time.sleep(0.2)

    thread = threading.Thread(target=analyst)
    thread.start()
    try:
        assert job.run(config, argparse.Namespace(available_now=True)) == 0
    finally:
        running.clear()
        thread.join()

    assert errors == [], "the writer never broke the open reader"
    assert counts, "the reader ran queries during the run"
    dead = _lake_query(config, "select source_offset, error, cluster from dead_letters order by source_offset")
    assert [offset for offset, _, _ in dead] == [60, 61, 62]
    assert "not a JSON object" in dead[0][1]
    assert "value is not finite" in dead[1][1] or "missing field" in dead[1][1]
    assert "unsupported schema version v=9" in dead[2][1]
    assert dead[0][2] == "test", "the job's cluster name when the record cannot tell"
    assert _lake_windows(config) == _expected_windows(before + after), "valid samples around them all arrived, once"
    held = reader.execute("select sum(samples) from metrics_10s where metric = 'under_replicated_partitions'")
    assert held.fetchone()[0] == 120, "the session opened before the run sees the new rows"
    reader.close()
    progress = _lake_query(config, "select query, sum(input_rows) from pipeline_progress group by 1 order by 1")
    assert progress == [("rollups", 125)], "one query reads every record once"
    timings = "select count(*), count(batch_duration_ms), count(freshness_s) from pipeline_progress"
    (recorded,) = _lake_query(config, f"{timings} where input_rows > 0")
    assert recorded[0] > 0 and recorded[0] == recorded[1] == recorded[2], f"every batch's timings recorded: {recorded}"


def _write_config(path: Path, broker: Any, topic: str, tmp_path: Path) -> Path:
    path.write_text(
        f"""
[cluster]
name = "crash"
bootstrap_servers = "{broker.bootstrap_servers}"
[transport]
samples_topic = "{topic}"
samples_partitions = 2
[lake]
path = "{tmp_path / "lake"}"
duckdb_path = "{tmp_path / "lagwatch.duckdb"}"
[spark]
checkpoint_dir = "{tmp_path / "checkpoints"}"
max_rows_per_batch = 400
"""
    )
    return path


@pytest.mark.slow
def test_kill_9_mid_run_then_restart_counts_every_sample_once(
    broker: Any, unique: Any, tmp_path: Path, artifacts_dir: Path
) -> None:
    from lagwatch.config import load_config

    topic = unique("crash")
    ensure_topic({"bootstrap.servers": broker.bootstrap_servers}, topic, 2)
    samples = gauge_samples(3000, START_MS, series=10)
    for partition in (0, 1):
        produce_samples(broker.bootstrap_servers, topic, samples[partition::2], partition=partition)
    config_path = _write_config(tmp_path / "config.toml", broker, topic, tmp_path)
    log = artifacts_dir / f"{topic}-stream.log"
    rollup_files = tmp_path / "lake" / "metrics_10s"

    first = start_lagwatch(config_path, log, "stream", "--available-now")
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and first.poll() is None:
            if len(list(rollup_files.glob("date=2*/b*-rollups.parquet"))) >= 2:
                break
            time.sleep(0.2)
        assert first.poll() is None, f"the job ended before it could be killed; see {log}"
        os.killpg(first.pid, signal.SIGKILL)  # the driver and its JVM die mid-run, no clean shutdown
    finally:
        first.wait(30)
    written_before = len(list(rollup_files.glob("date=2*/b*-rollups.parquet")))
    assert written_before >= 2

    second = start_lagwatch(config_path, log, "stream", "--available-now")
    assert second.wait(600) == 0, f"restart failed; see {log}"

    config = load_config(config_path)
    assert _lake_windows(config) == _expected_windows(samples), "nothing lost, nothing counted twice"
    assert _lake_query(config, "select count(*) from dead_letters") == [(0,)]
