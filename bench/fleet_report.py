"""The fleet bench's figures per size, the fits over the sizes, and the Result rows of both.

Apart from bench/bench_fleet.py (which runs the pipeline and reads the figures) so the
arithmetic can be checked, or re-run on saved figures, without a broker. The method and the
bars are bench/bench_fleet.py's docstring.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from bench.common import Result

PARTS = ("collector", "spark job", "broker", "workload")
#: Parts whose cost is Lagwatch's: fitted, judged for flatness and projected.
LAGWATCH_PARTS = ("collector", "spark job")
SPARK_BAR_PERCENT = 15.0
SPARK_BAR_GP = 5_000
FLATNESS_BAR = 1.2
RSS_GROWTH_BAR_PCT_H = 5.0
PROJECT_GP = 1_000_000
NAN = float("nan")


@dataclass
class SizeFigures:
    """What one size measured; CPU in % of a core, RSS in MB."""

    gp: int
    wall_s: float
    cpu_pct: dict[str, float]
    rss_start: dict[str, float]
    rss_end: dict[str, float]
    rss_peak: dict[str, float]
    #: Per part, RSS (MB) at every reading of the window, a reading every few seconds.
    rss_series: dict[str, list[float]] = field(default_factory=dict)
    batches: int = 0
    batch_mean_s: float = NAN
    freshness_p95_s: float = NAN
    #: Wall time of each collector cycle in the window.
    cycles: list[float] = field(default_factory=list)
    cycle_samples: int = 0
    cycles_failed: int = 0
    lake_gb_per_day: float = NAN
    load: float = 0.0
    workload_cycles: str = ""
    #: The collector's newest commit_log_in_use sample (1: committed offsets from the commit log).
    commit_log_in_use: float = NAN
    #: The Spark job's CPU (% of a core) by process kind: JVM, Python workers, driver, ….
    spark_split_pct: dict[str, float] = field(default_factory=dict)

    def rss_growth_pct_h(self, part: str) -> float:
        start = self.rss_start.get(part, 0.0)
        if not start:
            return NAN
        return (self.rss_end[part] - start) / start * 100 / (self.wall_s / 3600)

    def rss_trend_pct_h(self, part: str) -> float:
        """The same from a least-squares line through every reading (less at the mercy of one GC)."""
        series = self.rss_series.get(part, [])
        if len(series) < 2 or not series[0]:
            return NAN
        times = [self.wall_s * i / (len(series) - 1) for i in range(len(series))]
        slope = statistics.linear_regression(times, series)[0]
        return slope * 3600 / statistics.fmean(series) * 100


@dataclass(frozen=True)
class Fit:
    """value = a + b·gp over the sizes (least squares)."""

    a: float
    b: float

    def at(self, gp: float) -> float:
        return self.a + self.b * gp

    @classmethod
    def of(cls, gps: list[int], values: list[float]) -> Fit:
        if len(set(gps)) < 2:
            return cls(NAN, NAN)
        slope, intercept = statistics.linear_regression(gps, values)
        return cls(intercept, slope)


def cpu_s_per_interval(size: SizeFigures, part: str, interval_s: float) -> float:
    return size.cpu_pct.get(part, NAN) / 100 * interval_s


def flatness(gps: list[int], values: list[float]) -> float:
    """Marginal cost per gp from the middle to the largest size over that from the smallest to the middle."""
    if len(gps) < 3:
        return NAN
    lower = (values[-2] - values[0]) / (gps[-2] - gps[0])
    upper = (values[-1] - values[-2]) / (gps[-1] - gps[-2])
    return upper / lower if lower > 0 else NAN


def memory_note(size: SizeFigures, part: str) -> str:
    note = (f"RSS start {size.rss_start.get(part, NAN):,.0f} MB, end {size.rss_end.get(part, NAN):,.0f} MB, "
            f"peak {size.rss_peak.get(part, NAN):,.0f} MB")  # fmt: skip
    if part == "spark job" and size.spark_split_pct:
        split = sorted(size.spark_split_pct.items(), key=lambda item: -item[1])
        note += "; CPU by process: " + ", ".join(f"{kind} {pct:.1f} %" for kind, pct in split if pct >= 0.05)
    return f"{note}; {size.workload_cycles}" if part == "workload" else note


def size_rows(size: SizeFigures) -> list[Result]:
    """One size's CPU and memory per part, the job's batches and freshness, the cycle, the lake."""
    label = f"{size.gp:,} gp"
    rows = [Result(f"{label}: CPU {part}", size.cpu_pct.get(part, NAN), "% of a core", None,
                   note=memory_note(size, part)) for part in PARTS]  # fmt: skip
    growth = {part: size.rss_growth_pct_h(part) for part in PARTS}
    worst = max((p for p in PARTS if not math.isnan(growth[p])), key=lambda p: growth[p], default=PARTS[0])
    cycles = size.cycles or [NAN]
    rows += [
        Result(f"{label}: RSS growth, worst part ({worst})", growth[worst], "%/h", RSS_GROWTH_BAR_PCT_H, "max",
               "start → end: " + "; ".join(f"{p} {g:+.1f}" for p, g in growth.items())
               + f" over {size.wall_s:.0f} s; least-squares over the readings: "
               + "; ".join(f"{p} {size.rss_trend_pct_h(p):+.1f}" for p in PARTS)),
        Result(f"{label}: collector cycle wall time, median", statistics.median(cycles), "s", None,
               note=f"{len(size.cycles)} cycles, max {max(cycles):.2f} s, {size.cycle_samples:,} samples in the "
               f"last, {size.cycles_failed} with a failed target; "
               f"commit_log_in_use {size.commit_log_in_use:g}"),
        Result(f"{label}: Spark batch duration, mean", size.batch_mean_s, "s", None,
               note=f"{size.batches} batches with input (every query)"),
        Result(f"{label}: freshness p95 (pipeline_progress)", size.freshness_p95_s, "s", None,
               note=f"freshness_s of the {size.batches} batches with input"),
        Result(f"{label}: lake written per day", size.lake_gb_per_day, "GB", None,
               note=f"lake bytes over the window × 86,400 s; load average {size.load:.1f} at the end"),
    ]  # fmt: skip
    return rows


def fit_rows(sizes: list[SizeFigures], interval_s: float) -> list[Result]:
    """Per part: the fixed part a and the price b per gp per interval, flatness, and the Spark bar."""
    gps = [s.gp for s in sizes]
    rows: list[Result] = []
    for part in PARTS:
        values = [cpu_s_per_interval(s, part, interval_s) for s in sizes]
        fit = Fit.of(gps, values)
        per_gp = ", ".join(f"{g:,}: {v / g * 1e6:.1f}" for g, v in zip(gps, values, strict=True))
        rows.append(Result(f"fit {part}: CPU per group-partition per {interval_s:g} s interval", fit.b * 1e6, "µs",
                           None, note=f"fixed part a = {fit.a:.3f} CPU s per interval ({fit.a / interval_s * 100:.1f} "
                           f"% of a core); measured CPU per gp (µs) at {per_gp}"))  # fmt: skip
        if part in LAGWATCH_PARTS:
            rows.append(Result(f"fit {part}: flatness, marginal cost middle→largest / smallest→middle",
                               flatness(gps, values), "×", FLATNESS_BAR, "max",
                               "above 1: the price per group-partition rises with the fleet"))  # fmt: skip
    spark = Fit.of(gps, [s.cpu_pct.get("spark job", NAN) for s in sizes])
    note = f"fit {spark.a:.1f} % + {spark.b * 1e3:.3f} % per 1,000 gp"
    rows.append(Result(f"spark job CPU at {SPARK_BAR_GP:,} gp (from the fit)", spark.at(SPARK_BAR_GP), "% of a core",
                       SPARK_BAR_PERCENT, "max", note))  # fmt: skip
    return rows


def projection_rows(sizes: list[SizeFigures]) -> list[Result]:
    """Lagwatch's parts at PROJECT_GP from the fits of CPU, end RSS and lake bytes per day."""
    gps = [s.gp for s in sizes]
    label = f"projected at {PROJECT_GP:,} gp"
    rows: list[Result] = []
    for part in LAGWATCH_PARTS:
        cores = Fit.of(gps, [s.cpu_pct.get(part, NAN) for s in sizes]).at(PROJECT_GP) / 100
        rss = Fit.of(gps, [s.rss_end.get(part, NAN) for s in sizes]).at(PROJECT_GP)
        rows.append(Result(f"{label}: {part} cores", cores, "cores", None, note=f"RSS {rss:,.0f} MB (fit of end RSS)"))
    lake = Fit.of(gps, [s.lake_gb_per_day for s in sizes]).at(PROJECT_GP)
    rows.append(Result(f"{label}: lake per day", lake, "GB", None, note="fit of lake bytes written per day"))
    return rows


def measured_bar_rows(sizes: list[SizeFigures]) -> list[Result]:
    """The Spark bar read straight from a run at its size, where one ran (a single-size run has no fit)."""
    name, unit = f"spark job CPU at {SPARK_BAR_GP:,} gp (measured)", "% of a core"
    return [
        Result(name, size.cpu_pct.get("spark job", NAN), unit, SPARK_BAR_PERCENT, "max", f"over {size.wall_s:.0f} s")
        for size in sizes
        if size.gp == SPARK_BAR_GP
    ]


def results(sizes: list[SizeFigures], interval_s: float) -> list[Result]:
    """Every size's rows, the bar where measured, then the fits and projection (two sizes or more)."""
    rows = [row for size in sizes for row in size_rows(size)] + measured_bar_rows(sizes)
    if len({size.gp for size in sizes}) < 2:
        return rows
    return rows + fit_rows(sizes, interval_s) + projection_rows(sizes)
