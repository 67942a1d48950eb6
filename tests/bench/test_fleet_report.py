"""The fleet bench's arithmetic: the fit, flatness, the Spark bar and the collector log it parses.

Why test a bench: its fitted price per group-partition sizes operators' hosts (docs/sizing.md),
so a fit that recovered the wrong slope, or a cycle line it stopped recognising, would mislead
silently. The log lines come from the collector's own CycleSummary, not a copy of its format.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import pytest

from bench.bench_fleet import collector_cycles
from bench.fleet_report import SPARK_BAR_GP, Fit, SizeFigures, fit_rows, flatness, results
from bench.soak.sampler import cpu_s_by
from collectors.runner import CycleSummary

GPS = [2_000, 5_000, 20_000]


def size(gp: int, spark_pct: float, collector_pct: float) -> SizeFigures:
    parts = {"collector": collector_pct, "spark job": spark_pct, "broker": 10.0, "workload": 2.0}
    rss = dict.fromkeys(parts, 100.0)
    return SizeFigures(gp=gp, wall_s=240.0, cpu_pct=parts, rss_start=rss, rss_end=rss, rss_peak=rss)


def test_fit_recovers_a_fixed_part_and_a_price_per_group_partition() -> None:
    fit = Fit.of(GPS, [1.5 + 300e-6 * gp for gp in GPS])
    assert fit.a == pytest.approx(1.5) and fit.b == pytest.approx(300e-6)
    assert fit.at(1_000_000) == pytest.approx(301.5)
    assert math.isnan(Fit.of([2_000, 2_000], [1.0, 2.0]).b), "one size gives no slope"


def test_flatness_is_one_for_a_flat_price_and_above_for_a_rising_one() -> None:
    assert flatness(GPS, [0.1 * gp for gp in GPS]) == pytest.approx(1.0)
    rising = [0.1 * GPS[0], 0.1 * GPS[1], 0.1 * GPS[1] + 0.2 * (GPS[2] - GPS[1])]
    assert flatness(GPS, rising) == pytest.approx(2.0)


def test_spark_bar_row_reads_the_fit_at_its_size() -> None:
    sizes = [size(gp, spark_pct=5.0 + 0.002 * gp, collector_pct=1.0) for gp in GPS]
    (bar,) = [row for row in fit_rows(sizes, 15.0) if row.name.startswith("spark job CPU at")]
    assert bar.figure == pytest.approx(5.0 + 0.002 * SPARK_BAR_GP)
    assert bar.verdict == "pass"
    sizes = [size(gp, spark_pct=12.0 + 0.002 * gp, collector_pct=1.0) for gp in GPS]
    (bar,) = [row for row in fit_rows(sizes, 15.0) if row.name.startswith("spark job CPU at")]
    assert bar.verdict != "pass", "22 % at 5,000 gp is over the 15 % bar"


def test_one_size_prints_no_fit_and_judges_the_spark_bar_on_what_it_measured() -> None:
    rows = results([size(SPARK_BAR_GP, spark_pct=18.0, collector_pct=1.0)], 15.0)
    assert not [row for row in rows if row.name.startswith(("fit ", "projected "))]
    (bar,) = [row for row in rows if row.name.startswith("spark job CPU at")]
    assert bar.figure == 18.0 and bar.verdict != "pass"


def test_collector_cycles_are_read_from_the_collectors_own_lines() -> None:
    lines = []
    for ok, failed, samples, seconds in ((3, 0, 12_957, 0.44), (2, 1, 91_837, 1.81)):
        summary = CycleSummary(ok=[f"t{n}" for n in range(ok)], failed=[f"f{n}" for n in range(failed)])
        summary.samples, summary.duration_s = samples, seconds
        lines.append(f"INFO collectors.runner: cycle: {summary.line()}")
    assert collector_cycles("\n".join(lines)) == ([0.44, 1.81], 91_837, 1)


def test_cpu_is_split_by_process_label() -> None:
    """A real child burning CPU is counted under its own label, apart from its parent's."""
    burn = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n"
    child = subprocess.Popen([sys.executable, "-c", burn + "time.sleep(30)"])
    try:
        time.sleep(1.5)
        split = cpu_s_by(os.getpid(), lambda pid: "child" if pid == child.pid else "me")
    finally:
        child.kill()
        child.wait()
    assert split["child"] >= 0.35
    assert "me" in split
