"""`lagwatch up` at steady state: the share of a core each part of the demo stack uses.

Starts the shipped config with the demo (harness/local_stack.py: embedded broker, demo
workload, collectors, Spark job, dashboard, API with the alert engine), lets it warm up for
WARM_UP_S after "Lagwatch is up" (LAGWATCH_BENCH_STEADY_WARM_UP_S), then reads every process's
CPU seconds (utime + stime of /proc/<pid>/stat, children that exited included) at the start and
end of MEASURE_S (LAGWATCH_BENCH_STEADY_S) and divides by the wall time: 100 % is one core.
Processes are grouped into parts as `python -m bench footprint` groups them.

Bar: the whole demo stack at most 10 % of a core. The Spark job's JVM and Python workers are
most of it; how its cost grows with the groups monitored is `python -m bench fleet`'s.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.bench_footprint import part_of
from bench.common import Result
from harness.local_stack import LocalStack
from shell.processes import descendants

WARM_UP_S = float(os.environ.get("LAGWATCH_BENCH_STEADY_WARM_UP_S", "120"))
MEASURE_S = float(os.environ.get("LAGWATCH_BENCH_STEADY_S", "300"))
STACK_BAR_PERCENT = 10.0
_TICKS = os.sysconf("SC_CLK_TCK")
#: pid -> (stack part, CPU seconds)
Readings = dict[int, tuple[str, float]]


def cpu_seconds(pid: int) -> float:
    """CPU of a process and of its children it has waited for (a Python worker that exited counts)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11:15]) / _TICKS


def cpu_by_process(root: int) -> Readings:
    readings = {}
    for pid in [root, *(proc.pid for proc in descendants(root))]:
        part = part_of(pid)
        if part is not None:
            readings[pid] = (part, cpu_seconds(pid))
    return readings


def shares(before: Readings, after: Readings, wall_s: float) -> dict[str, float]:
    """Percent of a core per part over the interval; a process that started meanwhile counts from 0,
    one that ended counts until its last reading (its parent's reading then holds the rest)."""
    used: dict[str, float] = defaultdict(float)
    for pid, (part, end) in after.items():
        used[part] += end - before.get(pid, (part, 0.0))[1]
    return {part: 100.0 * seconds / wall_s for part, seconds in used.items()}


def run() -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="lagwatch-bench-steady-") as work, LocalStack(Path(work)).running() as up:
        time.sleep(WARM_UP_S)
        before, started = cpu_by_process(up.pid), time.monotonic()
        time.sleep(MEASURE_S)
        after, wall_s = cpu_by_process(up.pid), time.monotonic() - started
    parts = shares(before, after, wall_s)
    total = sum(parts.values())
    load = os.getloadavg()[0]
    context = f"{MEASURE_S:.0f} s after a {WARM_UP_S:.0f} s warm-up; load average {load:.1f} at the end"
    results = [Result("lagwatch up (demo): CPU of every process", total, "% of a core", STACK_BAR_PERCENT, "max",
                      context)]  # fmt: skip
    for part, share in sorted(parts.items(), key=lambda item: -item[1]):
        results.append(Result(f"lagwatch up (demo): CPU {part}", share, "% of a core", None))
    return results


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:,.1f} {result.unit} ({result.verdict}) {result.note}")
