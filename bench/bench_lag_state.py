"""The stateful operator's cost per batch at the soak's scale, without Spark: `python -m bench "lag state"`.

Why: the soak (500 groups × 10 partitions, ≈ 22,000 samples per 5 s collector cycle) missed its
freshness bar although the Spark bench sustains ≈ 220,000 samples/s on large batches. This drives
the very function Spark calls per state bucket (``rollups.rollup_bucket``) over the 16 buckets of
a real collector cycle, with a test double for Spark's GroupState (a blob in a dict, as the state
store keeps it), and splits one warm batch's time into its stages by cProfile: unpack, windows' state
decode/encode and update, lag state decode, lag step, lag state encode, output encode. The state blob sizes
are what Spark writes to the state store per batch (its delta files).

Set LAGWATCH_BENCH_LAG_GROUPS to change the number of groups (10 partitions each).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time
from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from bench.common import Result
from bench.soak import workload
from bench.soak.workload import MAX_LAG, PARTITIONS, RECORDS_PER_CYCLE, TOPICS, group_name, topic_name
from lagwatch.config import LagConfig
from lagwatch.samples import make_sample
from lagwatch.vocabulary import GROUP_LOG_START_METRIC
from spark_jobs import packed, rollups, route
from spark_jobs.schema import PARSED_SAMPLE_SCHEMA

GROUPS = int(os.environ.get("LAGWATCH_BENCH_LAG_GROUPS", str(workload.GROUPS)))
INTERVAL_MS = 5_000
T0 = 1_790_000_000_000
END, COMMITTED, LAG, CONSTANT = range(4)
#: The operator's share of the soak's 5 s freshness bar this bench holds a warm batch to.
BAR_S = 1.0
#: Cycles before the measured ones: 10 minutes of 5 s cycles, twice the default 300 s lag window.
WARM_BATCHES = int(os.environ.get("LAGWATCH_BENCH_LAG_WARM", "120"))
MEASURED_BATCHES = 3
#: Stages reported: label → the functions whose cumulative time it is.
STAGES: dict[str, tuple[str, ...]] = {
    "unpack": ("unpack",),
    "windows state decode+encode": ("decode_state", "encode_state"),
    "windows update": ("update_windows",),
    "lag state decode": ("decode_groups",),
    "lag step": ("update_lag",),
    "lag state encode": ("encode_groups",),
    "membership decode+encode": ("decode", "encode"),
    "output encode (Arrow IPC)": ("encode_parts",),
}


#: PARSED_SAMPLE_SCHEMA as Arrow (what the job's decoder yields), so Spark's file source can read the cycles too.
SAMPLE_SCHEMA = pa.schema(
    [
        pa.field(
            field.name,
            {"int": pa.int32(), "bigint": pa.int64(), "double": pa.float64()}.get(
                field.dataType.simpleString(),
                pa.timestamp("us", tz="UTC") if field.name == "event_time" else pa.string(),
            ),
        )
        for field in PARSED_SAMPLE_SCHEMA.fields
    ]
)


class StateDouble:
    """Test double for Spark's GroupState: the bucket's one-column state row, kept between batches."""

    def __init__(self) -> None:
        self.row: tuple[bytes] | None = None
        self.watermark_ms = 0

    @property
    def exists(self) -> bool:
        return self.row is not None

    @property
    def get(self) -> tuple[bytes]:
        assert self.row is not None
        return self.row

    def update(self, row: tuple[bytes]) -> None:
        self.row = row

    def getCurrentWatermarkMs(self) -> int:  # Spark's name
        return self.watermark_ms


def _sample(ts: int, metric: str, kind: str, value: float, source: str, **labels: Any) -> dict[str, Any]:
    sample = make_sample(
        ts=ts, cluster="soak", source=source, collector="c", metric=metric, kind=kind, value=value, **labels
    )
    return {name: getattr(sample, name, None) for name in PARSED_SAMPLE_SCHEMA.fieldNames()}


@cache
def _template() -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
    """One cycle's samples at T0, and per row: its ts offset, its group-partition index and what
    its value is (END offset, COMMITTED offset, LAG, or CONSTANT), to move them per cycle."""
    rows: list[dict[str, Any]] = []
    moves: list[tuple[int, int, int]] = []  # (ts offset, group-partition, value kind) per row
    for group in range(GROUPS):
        group_id, topic = group_name(group), topic_name(group % TOPICS)
        for metric, value in (("consumer_group_state", 3), ("consumer_group_members", 0)):
            rows.append(_sample(T0, metric, "gauge", value, "admin", group_id=group_id))
            moves.append((0, 0, CONSTANT))
        for partition in range(PARTITIONS):
            where = {"group_id": group_id, "topic": topic, "partition": partition}
            for offset_ms, metric, kind, source, value_kind in (
                (0, "committed_offset", "counter", "admin", COMMITTED),
                (0, "consumer_lag", "gauge", "admin", LAG),
                (0, GROUP_LOG_START_METRIC, "gauge", "admin", CONSTANT),
                (-1_000, "committed_offset", "counter", "commitlog", COMMITTED),
            ):
                rows.append(_sample(T0 + offset_ms, metric, kind, 0, source, **where))
                moves.append((offset_ms, group * PARTITIONS + partition, value_kind))
    for topic_index in range(TOPICS):
        for partition in range(PARTITIONS):
            topic = topic_name(topic_index)
            rows.append(_sample(T0, "log_end_offset", "counter", 0, "admin", topic=topic, partition=partition))
            moves.append((0, 0, END))
    rows.append(_sample(T0, "up", "gauge", 1, "admin"))
    moves.append((0, 0, CONSTANT))
    shift, index, kind = (np.array(column) for column in zip(*moves, strict=True))
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA), shift, index, kind


def cycle_samples(cycle: int) -> pa.Table:
    """Collector cycle ``cycle`` (5 s apart): as bench/soak/workload.py drives it, every partition
    gains RECORDS_PER_CYCLE records and every group commits 0..MAX_LAG-1 records behind the end."""
    template, shift, index, kind = _template()
    end = RECORDS_PER_CYCLE * (cycle + 1)
    lag = (index // PARTITIONS + index % PARTITIONS + cycle) % MAX_LAG
    value = np.select(
        [kind == END, kind == COMMITTED, kind == LAG], [end, end - lag, lag], template.column("value").to_numpy()
    ).astype(np.float64)
    ts = T0 + cycle * INTERVAL_MS + shift
    columns = {
        "ts": pa.array(ts, pa.int64()),
        "event_time": pa.array(ts * 1000, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "value": pa.array(value, pa.float64()),
    }
    for name, column in columns.items():
        template = template.set_column(template.schema.get_field_index(name), name, column)
    return template


def bucket_cells(samples: pa.Table) -> dict[int, bytes]:
    """bucket → its packed cell, as route.route hands them to the operator."""
    routed = route.route(samples, None, lag_routing=True)
    return dict(zip(routed.column("bucket").to_pylist(), routed.column("samples").to_pylist(), strict=True))


def run_batch(cells: dict[int, bytes], states: dict[int, StateDouble], watermark_ms: int) -> tuple[float, int]:
    """One micro-batch through every bucket: (seconds, state bytes written)."""
    lag_config = LagConfig()
    size_ms = {table: rollups.windows.window_millis(size) for size, table in rollups.WINDOW_TABLES.items()}
    started = time.perf_counter()
    written = 0
    for bucket, cell in cells.items():
        state = states.setdefault(bucket, StateDouble())
        state.watermark_ms = watermark_ms
        frames: Iterator[pd.DataFrame] = iter([pd.DataFrame({"samples": [cell]})])
        for _ in rollups.rollup_bucket((bucket,), frames, state, size_ms, 30_000, lag_config):
            pass
        written += len(state.get[0])
    return time.perf_counter() - started, written


def stage_seconds(profile: cProfile.Profile) -> dict[str, float]:
    """Cumulative seconds of each STAGES label's functions (by function name, within spark_jobs)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    totals = dict.fromkeys(STAGES, 0.0)
    for (path, _line, name), (_cc, _nc, _tt, cumulative, _callers) in stats.items():
        if "spark_jobs" not in path:
            continue
        for label, names in STAGES.items():
            if name in names and (label != "membership decode+encode" or path.endswith("membership.py")):
                totals[label] += cumulative
    return totals


def measure(warm_batches: int = WARM_BATCHES) -> Measured:
    """Warm the state over ``warm_batches`` cycles (the lag window fills, as in a running job),
    then time MEASURED_BATCHES more and profile one after them."""
    states: dict[int, StateDouble] = {}
    for cycle in range(warm_batches):
        run_batch(bucket_cells(cycle_samples(cycle)), states, _watermark(cycle))
    timed = [bucket_cells(cycle_samples(cycle)) for cycle in range(warm_batches, warm_batches + MEASURED_BATCHES + 1)]
    runs = [run_batch(cells, states, _watermark(warm_batches + n)) for n, cells in enumerate(timed[:-1])]
    profile = cProfile.Profile()
    profile.enable()
    profiled_s, _ = run_batch(timed[-1], states, _watermark(warm_batches + MEASURED_BATCHES))
    profile.disable()
    median_s = float(np.median([seconds for seconds, _ in runs]))
    scale = median_s / profiled_s  # the profiler's overhead, taken out of the stages
    stages = {label: seconds * scale for label, seconds in stage_seconds(profile).items()}
    samples = sum(packed.unpack([cell]).num_rows for cell in timed[-1].values())
    return Measured(median_s, stages, runs[-1][1], samples)


def _watermark(cycle: int) -> int:
    return T0 + cycle * INTERVAL_MS - 30_000


class Measured(NamedTuple):
    seconds: float  # median operator time of a warm batch, all buckets one after another
    stages: dict[str, float]
    state_bytes: int  # every bucket's state blob after the batch: what the state store writes
    samples: int


def run() -> list[Result]:
    load = os.getloadavg()[0]
    measured = measure()
    breakdown = ", ".join(f"{label} {value:.2f} s" for label, value in measured.stages.items())
    return [
        Result(
            f"operator time of one warm batch ({GROUPS * PARTITIONS:,} group-partitions, 16 buckets, no Spark)",
            measured.seconds,
            "s",
            BAR_S,
            "max",
            note=f"{measured.samples:,} samples after {WARM_BATCHES} warm cycles; {breakdown}; load average {load:.1f}",
        ),
        Result(
            "state written per batch (all buckets, pickled)",
            measured.state_bytes / 1e6,
            "MB",
            None,
            note="what Spark's state store writes per batch (its delta files, before LZ4)",
        ),
    ]


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:.3f} {result.unit} ({result.verdict}) {result.note}")
