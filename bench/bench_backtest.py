"""Backtest: replay the 11 default rules over a 7-day lake (`lagwatch alerts backtest --since 7d`).

The lake is issue 26's size: 7 days of 1-minute rows of lag_1m for 2,000 groups × 20 partitions
(403M rows), group_status per group and minute (20.2M rows), 8 broker metrics for 5 brokers and
pipeline progress. It is generated with numpy CHUNK_MINUTES at a time (memory stays bounded),
written through `lagwatch.lake.write_rows`, and cached under bench/.data/backtest/<key>/, the key
hashing its parameters, so a rerun skips generation (its time is reported apart). Mostly healthy,
as a real week is: a few groups a day go STOP or STALL (their time lag climbs, and a group with
tight retention runs out of margin), others have lag spikes, brokers have under-replicated
half-hours, and one broker is down for 6 minutes (its inhibition mutes the lag pages then).

Bar: ≤ 60 s for the whole replay (40,320 evaluations at the default 15 s), from issue 26.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.bench_alerts import METRICS, with_all_columns
from bench.common import Result, cpu_seconds_self, peak_rss_mb_self
from lagwatch.config import parse_config
from lagwatch.lake import ensure_lake, write_rows
from lagwatch.vocabulary import STATUS_ORDER

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

DATA = Path(__file__).resolve().parent / ".data" / "backtest"
BAR_S = 60.0
#: Rows are generated and written this many minutes at a time (memory stays bounded).
CHUNK_MINUTES = 120
#: Bump when the generated data changes, so a cached lake of the old kind is not reused.
GENERATOR = 2


@dataclass(frozen=True)
class LakeSize:
    """What the cached lake is keyed by."""

    days: int = 7
    groups: int = 2_000
    partitions: int = 20
    brokers: int = 5
    end: str = "2026-11-01T00:00:00+00:00"
    seed: int = 26

    def key(self) -> str:
        text = json.dumps({**asdict(self), "generator": GENERATOR}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def minutes(self) -> int:
        return self.days * 1440


def _progress(message: str) -> None:
    print(f"bench_backtest: {message}", file=sys.stderr, flush=True)


# -- incidents: per group and minute, which status and how far behind ------------------------

#: Per day: (status, how many groups, shortest and longest minutes).
INCIDENTS = (("STOP", 3, 20, 150), ("STALL", 5, 10, 45), ("WARN", 8, 5, 30))
#: Share of groups whose retention is tight (margin hours, not days): a long STOP reaches it.
TIGHT_RETENTION = 0.05


@dataclass(frozen=True)
class Incidents:
    """The week's incidents as (group, first minute, minutes, status code), and each group's margin."""

    group: np.ndarray
    start: np.ndarray
    length: np.ndarray
    code: np.ndarray
    margin_s: np.ndarray

    @classmethod
    def draw(cls, size: LakeSize) -> Incidents:
        import numpy as np

        rng = np.random.default_rng(size.seed)
        parts = []
        for status, per_day, shortest, longest in INCIDENTS:
            n = per_day * size.days
            parts.append((rng.integers(0, size.groups, n), rng.integers(0, size.minutes - longest, n),
                          rng.integers(shortest, longest + 1, n), np.full(n, STATUS_ORDER.index(status))))  # fmt: skip
        group, start, length, code = (np.concatenate(column) for column in zip(*parts, strict=True))
        tight = rng.random(size.groups) < TIGHT_RETENTION
        margin_s = np.where(tight, rng.integers(4_000, 9_000, size.groups), 3 * 86_400).astype(float)
        return cls(group, start, length, code, margin_s)

    def chunk(self, first: int, minutes: int, groups: int) -> tuple[np.ndarray, np.ndarray]:
        """(status code, minutes into its incident) per [minute, group] of the chunk; -1 when healthy."""
        import numpy as np

        code = np.zeros((minutes, groups), np.int8)
        since = np.full((minutes, groups), -1, np.int32)
        for g, s, n, c in zip(self.group, self.start, self.length, self.code, strict=True):
            lo, hi = max(s, first), min(s + n, first + minutes)
            if lo < hi:
                rows = np.arange(lo, hi)
                code[rows - first, g] = np.maximum(code[rows - first, g], c)
                since[rows - first, g] = rows - s
        return code, since


# -- tables ---------------------------------------------------------------------------------


def _strings(values: list[str], index: np.ndarray) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.take(pa.array(values, pa.string()), pa.array(index))


def _times(micros: np.ndarray) -> pa.Array:
    import pyarrow as pa

    return pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def _group_status(
    size: LakeSize, minute_us: np.ndarray, code: np.ndarray, since: np.ndarray, rng: np.random.Generator
) -> pa.Table:
    import numpy as np
    import pyarrow as pa

    minutes, groups = code.shape
    n = minutes * groups
    flat_code, flat_since = code.ravel(), since.ravel()
    behind = np.where(flat_code >= STATUS_ORDER.index("STALL"), 60.0 * (flat_since + 1), rng.integers(0, 30, n))
    behind = np.where(flat_code == STATUS_ORDER.index("WARN"), 420.0 + 10 * flat_since, behind)
    window = np.repeat(minute_us, groups)
    lag = (behind * 50).astype(np.int64)
    return pa.table({
        "cluster": _strings(["bench"], np.zeros(n, np.int8)),
        "group_id": _strings([f"g{g}" for g in range(groups)], np.tile(np.arange(groups), minutes)),
        "status": _strings(list(STATUS_ORDER), flat_code),
        "reason": _strings(["bench"], np.zeros(n, np.int8)),
        "rule": _strings(["bench"], np.zeros(n, np.int8)),
        "total_lag": lag * size.partitions,
        "max_lag": lag,
        "max_time_lag_s": behind.astype(float),
        "partitions": np.full(n, size.partitions, np.int32),
        "topics": _strings([f"topic-{g % 20}" for g in range(groups)], np.tile(np.arange(groups), minutes)),
        "group_type": _strings(["classic"], np.zeros(n, np.int8)),
        "window_start": _times(window),
        "updated_at": _times(window + 55_000_000),
        "version": np.ones(n, np.int64),
    })  # fmt: skip


def _lag_1m(size: LakeSize, first: int, minute_us: np.ndarray, code: np.ndarray, since: np.ndarray,
            margin_s: np.ndarray, rng: np.random.Generator) -> pa.Table:  # fmt: skip
    """One row per partition and minute; a stalled or stopped group's retention margin shrinks by the minute."""
    import numpy as np
    import pyarrow as pa

    minutes, groups = code.shape
    parts = size.partitions
    n = minutes * groups * parts
    per_group = np.repeat(np.arange(groups), parts)
    group_index = np.tile(per_group, minutes)
    flat_code = np.repeat(code.ravel(), parts)
    flat_since = np.repeat(since.ravel(), parts)
    stuck = flat_code >= STATUS_ORDER.index("STALL")
    margin = np.repeat(np.tile(margin_s, minutes), parts) - np.where(stuck, 60.0 * (flat_since + 1), 0.0)
    lag = np.where(stuck, 3_000 * (flat_since + 1), rng.integers(0, 200, n)).astype(np.int64)
    end_offset = np.repeat(np.arange(first, first + minutes, dtype=np.int64), groups * parts) * 3_000
    window = np.repeat(minute_us, groups * parts)
    return pa.table({
        "cluster": _strings(["bench"], np.zeros(n, np.int8)),
        "window_start": _times(window),
        "window_end": _times(window + 60_000_000),
        "group_id": _strings([f"g{g}" for g in range(groups)], group_index),
        "topic": _strings([f"topic-{g % 20}" for g in range(groups)], group_index),
        "partition": np.tile(np.arange(parts, dtype=np.int32), minutes * groups),
        "committed_offset": end_offset - lag,
        "end_offset": end_offset,
        "lag": lag,
        "lag_max": lag,
        "consume_rate": np.where(stuck, 0.0, 50.0),
        "produce_rate": np.full(n, 50.0),
        "time_lag_s": lag / 50.0,
        "time_lag_method": _strings(["interpolated"], np.zeros(n, np.int8)),
        "rate_span_s": np.full(n, 60.0),
        "retention_margin": (margin * 50).astype(np.int64),
        "retention_margin_s": margin,
        "status": _strings(list(STATUS_ORDER), flat_code),
        "reason": _strings(["bench"], np.zeros(n, np.int8)),
        "rule": _strings(["bench"], np.zeros(n, np.int8)),
        "group_type": _strings(["classic"], np.zeros(n, np.int8)),
        "version": np.ones(n, np.int64),
    })  # fmt: skip


def _minutes(day_start: str) -> str:
    return f"range(TIMESTAMPTZ '{day_start}', TIMESTAMPTZ '{day_start}' + INTERVAL 1 DAY, INTERVAL 1 MINUTE) m(ws)"


def _incident(*keys: str, one_in: int) -> str:
    """True for the first half hour of one hour in `one_in` per key set (deterministic)."""
    return f"(hash({', '.join(keys)}, date_trunc('hour', ws)) % {one_in} = 0 AND minute(ws) < 30)"


def _broker_down(day: int, days: int) -> str:
    """Broker 3 stops answering for 6 minutes on the fourth (or last) day: its lag pages are inhibited then."""
    return f"({day} = {min(3, days - 1)} AND b = 3 AND hour(ws) = 10 AND minute(ws) < 6)"


def _day_sql(table: str, day_start: str, day: int, size: LakeSize) -> str:
    """The small tables, a day per statement: broker metrics and pipeline progress."""
    minutes = _minutes(day_start)
    if table == "metrics_1m":
        names = ", ".join(f"'{m}'" for m in METRICS)
        down = _broker_down(day, size.days)
        return (
            f"SELECT 'bench' cluster, ws window_start, ws + INTERVAL 1 MINUTE window_end, 'jmx' source, metric, "
            f"'gauge' kind, b::VARCHAR broker, NULL topic, NULL::INTEGER partition, NULL group_id, NULL client_id, "
            f"6::BIGINT samples, v min, v max, v avg, v first, v last, "
            f"CASE WHEN metric = 'leader_elections_total' THEN (CASE WHEN {down} THEN 0.2 ELSE 0.0 END) END "
            f"rate_per_s, 1::BIGINT version "
            f"FROM (SELECT ws, metric, b, CASE metric WHEN 'up' THEN (NOT {down})::INT "
            f"WHEN 'active_controller_count' THEN (b = 1)::INT "
            f"WHEN 'under_replicated_partitions' THEN ({_incident('b', one_in=100)} OR {down})::INT "
            f"WHEN 'offline_partitions' THEN 0.0 ELSE (hash(ws, metric, b) % 100)::DOUBLE END v "
            f"FROM {minutes}, unnest([{names}]) t(metric), range(1, {size.brokers + 1}) r(b))"
        )
    return (
        f"SELECT 'bench' cluster, 'samples' query, epoch(ws)::BIGINT batch_id, ws ts, 1000::BIGINT input_rows, "
        f"100.0 input_rows_per_s, 100.0 processed_rows_per_s, 500::BIGINT batch_duration_ms, ws watermark, "
        f"3.0 freshness_s, 1::BIGINT version FROM {minutes}"
    )


TABLES = ("lag_1m", "group_status", "metrics_1m", "pipeline_progress")


def _write(lake: Path, table: str, data: pa.Table, stem: str, rows: dict[str, int]) -> None:
    write_rows(lake, table, with_all_columns(table, data), stem)
    rows[table] += data.num_rows


def generate(size: LakeSize, lake: Path) -> dict[str, int]:
    """Chunk by chunk (CHUNK_MINUTES of every table), written through the lake's own layout."""
    import duckdb
    import numpy as np

    ensure_lake(lake)
    rng = np.random.default_rng(size.seed + 1)
    incidents = Incidents.draw(size)
    start = dt.datetime.fromisoformat(size.end) - dt.timedelta(days=size.days)
    start_us = round(start.timestamp()) * 1_000_000
    rows = dict.fromkeys(TABLES, 0)
    for first in range(0, size.minutes, CHUNK_MINUTES):
        minute_us = start_us + np.arange(first, first + CHUNK_MINUTES, dtype=np.int64) * 60_000_000
        code, since = incidents.chunk(first, CHUNK_MINUTES, size.groups)
        stem = f"bench-{start + dt.timedelta(minutes=first):%Y%m%dT%H%M}"
        _write(lake, "group_status", _group_status(size, minute_us, code, since, rng), stem, rows)
        lag = _lag_1m(size, first, minute_us, code, since, incidents.margin_s, rng)
        _write(lake, "lag_1m", lag, stem, rows)
        del lag
        if first % 1440 == 0:
            _progress(f"generated {start + dt.timedelta(minutes=first):%Y-%m-%d}")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for day in range(size.days):
        day_start = start + dt.timedelta(days=day)
        for table in ("metrics_1m", "pipeline_progress"):
            data = con.sql(_day_sql(table, day_start.isoformat(), day, size)).to_arrow_table()
            _write(lake, table, data, f"bench-{day_start:%Y%m%d}", rows)
    return rows


def build_lake(size: LakeSize = LakeSize()) -> dict[str, object]:
    """The lake for `size`, generated once and cached under bench/.data/ by its parameters."""
    folder = DATA / size.key()
    meta = folder / "meta.json"
    if meta.exists():
        return {**json.loads(meta.read_text()), "generated_s": None}
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    rows = generate(size, folder / "lake")
    end = dt.datetime.fromisoformat(size.end)
    info = {
        "lake": str(folder / "lake"),
        "until": end.timestamp() - 1,
        "rows": rows,
        "bytes": sum(f.stat().st_size for f in (folder / "lake").rglob("*.parquet")),
        "generation_s": time.perf_counter() - started,
        "size": asdict(size),
    }
    meta.write_text(json.dumps(info))
    return {**info, "generated_s": info["generation_s"]}


def run() -> list[Result]:
    import os

    from alerts.backtest import backtest
    from alerts.evaluate import Grid
    from alerts.rules import compile_rules

    size = LakeSize()
    info = build_lake(size)
    until = float(info["until"])  # type: ignore[arg-type]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        config = parse_config(
            {
                "cluster": {"name": "bench"},
                "lake": {"path": str(info["lake"]), "duckdb_path": str(Path(tmp) / "lagwatch.duckdb")},
                "alerts": {"state_dir": tmp},
            },
            environ={},
        )
        rules = compile_rules(config.alerts)
        every = config.alerts.evaluate_every_s
        grid = Grid.over(until - size.days * 86_400 + every, until, every)
        started, cpu_started = time.perf_counter(), cpu_seconds_self()
        report = backtest(config, rules, [r.name for r in rules], grid)
        elapsed, cpu = time.perf_counter() - started, cpu_seconds_self() - cpu_started
    alerts = sum(r.totals["alerts"] for r in report.rules)
    notifications = sum(r.totals["notifications"] for r in report.rules)
    rows: dict[str, int] = info["rows"]  # type: ignore[assignment]
    generated = info["generated_s"]
    note = (
        f"{len(rules)} default rules, {grid.steps:,} evaluations; lake of {size.groups:,} groups × "
        f"{size.partitions} partitions × {size.days} days, {info['bytes'] / 1e9:.2f} GB on disk: "  # type: ignore[operator]
        + ", ".join(f"{t} {n / 1e6:.1f}M rows" for t, n in rows.items())
        + f"; {alerts:,} alerts, {notifications:,} notifications, {len(report.status_changes):,} status changes; "
        f"{cpu:.0f} CPU s; peak RSS {peak_rss_mb_self():,.0f} MB; load {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after; lake generated in "
        + (f"{generated:.0f} s (this run)" if generated else f"{info['generation_s']:.0f} s (cached)")
    )
    return [Result("replay 11 default rules over 7 days", elapsed, "s", BAR_S, "max", note)]


if __name__ == "__main__":
    for result in run():
        print(result)
