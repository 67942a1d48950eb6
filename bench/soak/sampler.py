"""What the soak records every minute, each read from where the running stack keeps it.

- Processes: each component's whole process tree (the pid in state/stack.json and everything
  below it, so the Spark job's JVM and its Python workers count under "spark job"): RSS and PSS
  summed from /proc/<pid>/smaps_rollup (PSS splits shared pages between the processes sharing
  them, so a tree's PSS does not count the same library page twice), and CPU seconds from
  /proc/<pid>/stat (own time plus the time of children already reaped, which the kernel adds to
  their parent).
- Lake: Parquet files and bytes per table, the live ones (not on the table's tombstone list)
  and the largest live count in one date partition (what compaction bounds).
- Spark checkpoint: bytes in all, and in the state stores (`state/` under each query's checkpoint).
- Freshness: the job's own pipeline_progress `freshness_s` (report time − newest event time
  written) of every batch with input in the minute: the figure bench_spark judges too.
- `/metrics`: wall time of GETs on the API (the render reads the lake each time).
- False alarms: firing alerts so far (alert_events) that the workload gives no cause for: any
  alert on a group the demo keeps healthy or on the soak's groups, and any alert with no group
  (broker and cluster rules: nothing in the soak is down or under-replicated).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import rss_pss_kb
from lagwatch import lake as lakelib
from lagwatch.lake_maintenance import COMPACTED_PREFIX, TOMBSTONES_FILE
from shell.processes import descendants

METRICS_GETS = 3


@dataclass
class TreeFigures:
    rss_mb: float = 0.0
    pss_mb: float = 0.0
    cpu_s: float = 0.0
    processes: int = 0


@dataclass
class TableFigures:
    files: int = 0
    live_files: int = 0
    bytes: int = 0
    #: Most live files in one date partition (the schema sentinel aside).
    max_live_per_partition: int = 0
    compacted_files: int = 0


@dataclass
class Minute:
    """One row of the soak's record; `t_min` counts from the moment the stack was up."""

    t_min: float
    processes: dict[str, TreeFigures] = field(default_factory=dict)
    tables: dict[str, TableFigures] = field(default_factory=dict)
    checkpoint_mb: float = 0.0
    state_store_mb: float = 0.0
    #: The Spark job's newest batch id (pipeline_progress): tells when its checkpoint is past warm-up.
    batch_id: int | None = None
    freshness_p95_s: float | None = None
    freshness_batches: int = 0
    metrics_ms: float | None = None
    metrics_bytes: int = 0
    page_ms: dict[str, float | None] = field(default_factory=dict)
    load_average: float = 0.0
    #: Firing alerts since the start, per alertname, that no part of the workload asked for.
    false_alarms: dict[str, int] = field(default_factory=dict)


def minute_from_dict(data: dict[str, Any]) -> Minute:
    """A Minute back from its JSON form (bench/.data/soak-record.json), to judge a record again."""
    return Minute(
        **{
            **data,
            "processes": {k: TreeFigures(**v) for k, v in data["processes"].items()},
            "tables": {k: TableFigures(**v) for k, v in data["tables"].items()},
        }
    )


# --- processes ---
def _cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime: the process's CPU and that of its reaped children."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14))


def cpu_s_by(root: int, label: Callable[[int], str | None]) -> dict[str, float]:
    """CPU seconds of `root`'s process tree by each process's label (reaped children in their parent's)."""
    totals: dict[str, float] = {}
    for pid in [root, *(proc.pid for proc in descendants(root))]:
        name = label(pid)
        if name is not None:
            totals[name] = totals.get(name, 0.0) + _cpu_ticks(pid) / os.sysconf("SC_CLK_TCK")
    return totals


def tree_figures(root: int) -> TreeFigures:
    pids = [root, *(proc.pid for proc in descendants(root))]
    figures = TreeFigures(processes=len(pids))
    for pid in pids:
        rss, pss = rss_pss_kb(pid)
        figures.rss_mb += rss / 1024
        figures.pss_mb += pss / 1024
        figures.cpu_s += _cpu_ticks(pid) / os.sysconf("SC_CLK_TCK")
    return figures


# --- lake and checkpoint ---
def table_figures(table_root: Path) -> TableFigures:
    figures = TableFigures()
    tombstones_path = table_root / TOMBSTONES_FILE
    tombstoned = set(json.loads(tombstones_path.read_text())) if tombstones_path.exists() else set()
    per_partition: dict[str, int] = {}
    for file in table_root.glob("date=*/*.parquet"):
        if file.parent.name == lakelib.SCHEMA_PARTITION:
            continue
        try:
            figures.bytes += file.stat().st_size
        except OSError:  # deleted after its grace period while we looked
            continue
        figures.files += 1
        if file.relative_to(table_root).as_posix() not in tombstoned:
            figures.live_files += 1
            figures.compacted_files += file.name.startswith(COMPACTED_PREFIX)
            per_partition[file.parent.name] = per_partition.get(file.parent.name, 0) + 1
    figures.max_live_per_partition = max(per_partition.values(), default=0)
    return figures


def lake_figures(lake: Path) -> dict[str, TableFigures]:
    return {name: table_figures(lake / name) for name in lakelib.TABLES if (lake / name).is_dir()}


def directory_mb(root: Path, only: str | None = None) -> float:
    """Bytes under `root` in MB; with `only`, just under directories of that name."""
    total = 0
    for path in root.rglob("*"):
        if only is not None and only not in path.relative_to(root).parts[:-1]:
            continue
        try:
            if path.is_file():
                total += path.stat().st_size
        except OSError:
            continue
    return total / 1e6


# --- freshness and the API ---
def freshness_p95(lake: Path, since: float) -> tuple[float | None, int]:
    """(p95 of freshness_s, batches) over the batches with input reported since `since` (epoch s)."""
    import duckdb

    if not any((lake / "pipeline_progress").glob("date=2*/*.parquet")):
        return None, 0
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT DISTINCT ON (query, batch_id) freshness_s FROM read_parquet(?, union_by_name = true) "
            "WHERE epoch(ts) >= ? AND input_rows > 0 AND freshness_s IS NOT NULL",
            [(lake / "pipeline_progress").as_posix() + "/date=2*/*.parquet", since],
        ).fetchall()
    finally:
        con.close()
    values = sorted(r[0] for r in rows)
    if not values:
        return None, 0
    return values[min(len(values) - 1, round(0.95 * (len(values) - 1)))], len(values)


def false_alarms(lake: Path, unhealthy_groups: frozenset[str]) -> dict[str, int]:
    """Firing alerts so far per alertname on anything but `unhealthy_groups` (the demo's slow,
    stopped, stalled and rewinding groups, whose alerts are the point of the demo)."""
    import duckdb

    if not any((lake / "alert_events").glob("date=2*/*.parquet")):
        return {}
    con = duckdb.connect()
    try:
        rows = con.execute(
            "SELECT alertname, count(DISTINCT labels) FROM read_parquet(?, union_by_name = true) "
            "WHERE event = 'firing' AND coalesce(json_extract_string(labels, '$.group_id'), '') "
            "NOT IN (SELECT unnest(?)) GROUP BY alertname",
            [(lake / "alert_events").as_posix() + "/date=2*/*.parquet", sorted(unhealthy_groups)],
        ).fetchall()
    finally:
        con.close()
    return {name: int(count) for name, count in rows}


def newest_batch_id(lake: Path) -> int | None:
    """The newest batch id any query of the job reported (None before its first batch)."""
    import duckdb

    if not any((lake / "pipeline_progress").glob("date=2*/*.parquet")):
        return None
    con = duckdb.connect()
    try:
        row = con.execute(
            "SELECT max(batch_id) FROM read_parquet(?, union_by_name = true)",
            [(lake / "pipeline_progress").as_posix() + "/date=2*/*.parquet"],
        ).fetchone()
    finally:
        con.close()
    return None if row is None or row[0] is None else int(row[0])


def metrics_render_ms(api_url: str) -> tuple[float | None, int]:
    """(median ms of METRICS_GETS GETs on /metrics, bytes of the last body); None if it failed."""
    times = []
    size = 0
    for _ in range(METRICS_GETS):
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(f"{api_url}/metrics", timeout=30) as response:
                size = len(response.read())
        except OSError:
            continue
        times.append((time.perf_counter() - started) * 1000)
    return (sorted(times)[len(times) // 2] if times else None), size
