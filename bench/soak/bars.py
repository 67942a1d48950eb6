"""The soak's bars, judged on the whole record at the end, as bench Results.

- Memory: RSS growth per component over the last 40 minutes of a 60-minute run (the last 2/3 of
  any run), from a least-squares line rather than first-vs-last, so one garbage-collection
  sawtooth or a Python worker coming and going does not decide it: ≤ 5 %.
- Lake: compaction merges one tier of a date partition's files (batch `b…` files, else
  compacted `c…` ones) once it holds more than `compact_after_files` (N); passes run every
  `maintenance_interval_s` (M) and the job writes at most one batch file per table partition
  per trigger (T). Batch files then peak at N + M/T just before a pass and compacted ones at
  N + 1, so a partition never holds more than 2N + 1 + ⌈M/T⌉ live files (tombstoned files wait
  out the grace period on top, which bounds the disk, not what a query reads).
- Spark checkpoint (state stores included): Spark keeps the offsets, commits and state-store
  versions of the newest `spark.sql.streaming.minBatchesToRetain` batches (100 by default; a
  state store also keeps the snapshot before the oldest, written every 10 versions), so the
  checkpoint grows by design until the job has run that many batches. Warm-up therefore ends at
  the later of the first third of the run and batch 100 + 20; past it, the fitted growth is ≤ 5 %.
  A run too short (or a host too slow) to get there states the size and judges nothing.
- Freshness: every minute's p95 ≤ 5 s (the lake contract's sample → queryable bar); a minute
  with no batch at all counts as failing.
- Alerts: no default alert fires that the workload gives no cause for (sampler.false_alarms): 0.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from bench.common import Result
from bench.soak.sampler import Minute
from lagwatch.config import Config

GROWTH_BAR_PCT = 5.0
FRESHNESS_BAR_S = 5.0
#: Share of the run after which growth is judged (a 60-minute run: the last 40 minutes).
JUDGED_SHARE = 2 / 3
#: Spark's default `spark.sql.streaming.minBatchesToRetain`.
DEFAULT_RETAINED_BATCHES = 100
#: Batches past the retained ones before the checkpoint counts as warm: a state store keeps the
#: snapshot (every 10 versions) before its oldest retained version, and deletes in a background
#: maintenance pass.
SNAPSHOT_SLACK_BATCHES = 20


def judged(minutes: Sequence[Minute]) -> list[Minute]:
    """The last 2/3 of the record (at least two points)."""
    start = min(len(minutes) - 2, math.floor(len(minutes) * (1 - JUDGED_SHARE)))
    return list(minutes[max(0, start) :])


def growth_pct(times: Sequence[float], values: Sequence[float]) -> float:
    """Growth over the span of `times` from a least-squares line, in % of the line's start value."""
    if len(times) < 2 or len(set(times)) < 2:
        return 0.0
    slope, intercept = statistics.linear_regression(times, values)
    start = intercept + slope * times[0]
    if start <= 0:
        return 0.0
    return slope * (times[-1] - times[0]) / start * 100


def compaction_bound(config: Config) -> int:
    """Live files one table date partition may hold at most (module docstring)."""
    lake, spark = config.lake, config.spark
    return 2 * lake.compact_after_files + 1 + math.ceil(spark.maintenance_interval_s / spark.trigger_s)


def memory_results(minutes: Sequence[Minute]) -> list[Result]:
    window = judged(minutes)
    times = [m.t_min for m in window]
    span = f"t = {times[0]:.0f}–{times[-1]:.0f} min"
    results = []
    for name in minutes[-1].processes:
        rss = [m.processes[name].rss_mb if name in m.processes else 0.0 for m in window]
        pss = [m.processes[name].pss_mb if name in m.processes else 0.0 for m in window]
        results.append(
            Result(
                f"soak: {name} RSS growth",
                growth_pct(times, rss),
                "%",
                GROWTH_BAR_PCT,
                "max",
                f"{span}: RSS {rss[0]:.0f} → {rss[-1]:.0f} MB, PSS {pss[0]:.0f} → {pss[-1]:.0f} MB",
            )
        )
    return results


def cpu_results(minutes: Sequence[Minute]) -> list[Result]:
    """CPU per component as a share of one core over the run (stated)."""
    first, last = minutes[0], minutes[-1]
    wall_s = (last.t_min - first.t_min) * 60 or 1.0
    results = []
    for name, figures in last.processes.items():
        used = figures.cpu_s - (first.processes[name].cpu_s if name in first.processes else 0.0)
        results.append(Result(f"soak: {name} CPU", used / wall_s * 100, "% of a core", None, "max",
                              f"{used:.0f} CPU s over {wall_s / 60:.0f} min"))  # fmt: skip
    return results


def lake_results(minutes: Sequence[Minute], bound: int, config: Config) -> list[Result]:
    results = []
    for table in minutes[-1].tables:
        peak = max(m.tables[table].max_live_per_partition for m in minutes if table in m.tables)
        last = minutes[-1].tables[table]
        results.append(
            Result(
                f"soak: {table} live files per partition, peak",
                peak,
                "files",
                bound,
                "max",
                f"end: {last.live_files} live ({last.compacted_files} compacted), {last.files} on disk, "
                f"{last.bytes / 1e6:.1f} MB; bound 2×{config.lake.compact_after_files}+1+"
                f"⌈{config.spark.maintenance_interval_s:g}/{config.spark.trigger_s:g}⌉",
            )
        )
    return results


def retained_batches(config: Config) -> int:
    """Batches Spark keeps in the checkpoint (`spark.sql.streaming.minBatchesToRetain`)."""
    return int(config.spark.conf.get("spark.sql.streaming.minBatchesToRetain", DEFAULT_RETAINED_BATCHES))


def checkpoint_result(minutes: Sequence[Minute], retained: int) -> Result:
    warm_from = retained + SNAPSHOT_SLACK_BATCHES
    window = [m for m in judged(minutes) if m.batch_id is not None and m.batch_id >= warm_from]
    if len(window) < 3:
        last = minutes[-1]
        return Result(
            "soak: Spark checkpoint size (warm-up not over: not judged)",
            last.checkpoint_mb,
            "MB",
            None,
            "max",
            f"state stores {last.state_store_mb:.1f} MB at batch {last.batch_id}; Spark keeps the newest "
            f"{retained} batches, so growth is judged from batch {warm_from} on",
        )
    sizes = [m.checkpoint_mb for m in window]
    return Result(
        "soak: Spark checkpoint growth past warm-up",
        growth_pct([m.t_min for m in window], sizes),
        "%",
        GROWTH_BAR_PCT,
        "max",
        f"{sizes[0]:.1f} → {sizes[-1]:.1f} MB (state stores {window[0].state_store_mb:.1f} → "
        f"{window[-1].state_store_mb:.1f} MB) from t = {window[0].t_min:.0f} min, batch {window[0].batch_id} "
        f"(Spark keeps {retained} batches)",
    )


def freshness_result(minutes: Sequence[Minute]) -> Result:
    figures = [m.freshness_p95_s for m in minutes[1:]]  # the first sample has no minute behind it
    empty = sum(1 for f in figures if f is None)
    worst = math.inf if empty else max(f for f in figures if f is not None)
    known = [f for f in figures if f is not None]
    over = sum(1 for f in known if f > FRESHNESS_BAR_S)
    median = statistics.median(known) if known else math.nan
    return Result(
        "soak: freshness p95, worst minute",
        worst,
        "s",
        FRESHNESS_BAR_S,
        "max",
        f"{len(figures)} minutes: median minute p95 {median:.1f} s, {over} over the bar, {empty} without a batch",
    )


def false_alarm_result(minutes: Sequence[Minute]) -> Result:
    alarms = minutes[-1].false_alarms
    named = ", ".join(f"{name} {count}" for name, count in sorted(alarms.items())) or "none"
    return Result(
        "soak: alerts the workload gives no cause for",
        sum(alarms.values()),
        "alerts",
        0,
        "max",
        f"default rules, healthy demo groups, 500 soak groups and the broker over {minutes[-1].t_min:.0f} min: {named}",
    )


def _stated_ms(name: str, values: Sequence[float | None], what: str) -> Result:
    known = [v for v in values if v is not None]
    missing = len(values) - len(known)
    if not known:
        return Result(name, math.nan, "ms", None, "max", f"no {what} measured")
    return Result(name, statistics.median(known), "ms", None, "max",
                  f"median of {len(known)} minutes, max {max(known):,.0f} ms; {missing} failed")  # fmt: skip


def serving_results(minutes: Sequence[Minute]) -> list[Result]:
    results = [_stated_ms("soak: /metrics render", [m.metrics_ms for m in minutes], "/metrics GET")]
    for page in minutes[-1].page_ms:
        values = [m.page_ms.get(page) for m in minutes]
        results.append(_stated_ms(f"soak: dashboard {page} page in chromium", values, "page"))
    return results


def results(minutes: Sequence[Minute], config: Config) -> list[Result]:
    loads = [m.load_average for m in minutes]
    return [
        *memory_results(minutes),
        *lake_results(minutes, compaction_bound(config), config),
        checkpoint_result(minutes, retained_batches(config)),
        freshness_result(minutes),
        false_alarm_result(minutes),
        *serving_results(minutes),
        *cpu_results(minutes),
        Result(
            "soak: machine load average (1 min)",
            statistics.median(loads),
            "",
            None,
            "max",
            f"median over the run, max {max(loads):.1f}; the machine is shared",
        ),
    ]
