"""The soak's batch through real Spark: `python -m bench "batch cost"` (on request: ≈ 5 minutes).

Why: ``bench_lag_state`` times the operator's Python alone; this runs the same collector cycles
(500 groups × 10 partitions, ≈ 21,000 samples each) through the job's plan in a local[2]
session — Parquet file source, pack, route, shuffle, the stateful operator, and the lake
writer of foreachBatch — one cycle per micro-batch, and reads Spark's own progress reports of
the last batches (the state at its plateau from about cycle 60 on): trigger time, addBatch,
the operator's allUpdatesTimeMs (summed over tasks), the state store's commit, the lake writes,
and the delta files' size. The real job reads Kafka and decodes JSON first (not timed here).

LAGWATCH_BENCH_LAG_CYCLES sets the number of cycles (default 70).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bench.bench_lag_state import cycle_samples
from bench.common import Result
from lagwatch.config import LagConfig, parse_config
from spark_jobs.lake_sink import LakeWriter
from spark_jobs.packed import PACKED_DDL, pack_batches
from spark_jobs.rollups import ROLLUP_TABLES, decode_table, rollups
from spark_jobs.route import routed
from spark_jobs.schema import PARSED_SAMPLE_SCHEMA
from spark_jobs.session import build_session

CYCLES = int(os.environ.get("LAGWATCH_BENCH_LAG_CYCLES", "70"))
#: Batches judged: the last ones, once the state has filled the 300 s lag window.
LAST = 12


def write_cycles(directory: Path, cycles: int) -> None:
    """One Parquet file per cycle, mtimes a second apart (the file source orders by mtime)."""
    directory.mkdir(parents=True)
    first = int(time.time()) - cycles
    for cycle in range(cycles):
        path = directory / f"cycle-{cycle:04d}.parquet"
        pq.write_table(cycle_samples(cycle), path)
        os.utime(path, (first + cycle, first + cycle))


class TimedWriter:
    """The job's LakeWriter, with the seconds of its Arrow collection and of its writes per batch."""

    def __init__(self, lake: Path) -> None:
        self.lake = LakeWriter(lake, "rollups", {t: partial(decode_table, table=t) for t in ROLLUP_TABLES})
        self.seconds: list[tuple[float, float]] = []

    def __call__(self, batch: Any, batch_id: int) -> None:
        started = time.perf_counter()
        data = batch.toArrow()
        collected = time.perf_counter()
        for table, select in self.lake.tables.items():
            self.lake.write_table(table, select(data), batch_id)
        self.seconds.append((collected - started, time.perf_counter() - collected))


def run_query(root: Path) -> tuple[list[dict[str, Any]], list[tuple[float, float]]]:
    """Every cycle through the rollups query: (Spark's progress reports, the writer's seconds)."""
    spark = build_session(parse_config({"cluster": {"name": "soak"}}))  # the job's own session, local[2]
    spark.sparkContext.setLogLevel("ERROR")
    try:
        source = spark.readStream.schema(PARSED_SAMPLE_SCHEMA).option("maxFilesPerTrigger", 1)
        packed = source.parquet(str(root / "samples")).mapInArrow(pack_batches, PACKED_DDL)
        rolled = rollups(routed(packed, None, lag_routing=True), 30, lag_config=LagConfig())
        writer = TimedWriter(root / "lake")
        query = (
            rolled.writeStream.foreachBatch(writer)
            .outputMode("append")
            .option("checkpointLocation", str(root / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return list(query.recentProgress), writer.seconds
    finally:
        spark.stop()


def run() -> list[Result]:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-batch-cost-") as folder:
        root = Path(folder)
        write_cycles(root / "samples", CYCLES)
        progress, writes = run_query(root)
        deltas = [path.stat().st_size for path in (root / "checkpoint" / "state").rglob(f"{CYCLES}.delta")]
    last = progress[-LAST:]
    trigger = statistics.median(p["durationMs"]["triggerExecution"] / 1000 for p in last)
    add_batch = statistics.median(p["durationMs"]["addBatch"] / 1000 for p in last)
    updates = statistics.median(p["stateOperators"][0]["allUpdatesTimeMs"] / 1000 for p in last)
    commit = statistics.median(p["stateOperators"][0]["commitTimeMs"] / 1000 for p in last)
    collect = statistics.median(seconds for seconds, _ in writes[-LAST:])
    lake = statistics.median(seconds for _, seconds in writes[-LAST:])
    rows = last[-1]["numInputRows"]
    return [
        Result(
            f"Spark micro-batch of one soak cycle ({rows:,} samples, 5,000 group-partitions), median",
            trigger,
            "s",
            None,
            note=(
                f"last {len(last)} of {CYCLES} batches, local[2]: addBatch {add_batch:.2f} s (toArrow running the plan "
                f"{collect:.2f} s, lake writes {lake:.2f} s), operator allUpdates {updates:.2f} s summed over tasks, "
                f"state commit {commit:.2f} s, state delta {sum(deltas) / 1e6:.1f} MB; load average {load:.1f}"
            ),
        )
    ]


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:.3f} {result.unit} {result.note}")
