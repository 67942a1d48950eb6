"""`lagwatch up` footprint: resident memory of every process of the demo stack at steady state.

Starts the shipped config with the demo (harness/local_stack.py: embedded broker, demo
workload, collectors, Spark job, dashboard, API with the alert engine), waits STEADY_S after
"Lagwatch is up" (LAGWATCH_BENCH_FOOTPRINT_S, default 300; e.g. 60 for a quick look), then sums
RSS and PSS from /proc/<pid>/smaps_rollup over the supervisor's process tree, per component.
RSS counts a page shared by several processes (forked Python workers, shared libraries) in
each of them, which is what `ps` and most monitors show; PSS splits it between them.

Bar: 1.0 GB RSS in all. Reference: Burrow watches the same workload in 242 MB with ZooKeeper.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from bench.common import Result, rss_pss_kb
from harness.local_stack import LocalStack
from shell.processes import descendants

STEADY_S = float(os.environ.get("LAGWATCH_BENCH_FOOTPRINT_S", "300"))
BAR_MB = 1000.0
BURROW_MB = 242.0
#: Component label per process, first match of its command line wins (order matters).
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("spark JVM", r"/java\b"),
    ("spark python workers", r"pyspark\.daemon pyspark\.worker"),
    ("spark planner daemons", r"pyspark\.daemon pyspark\.sql\.worker"),
    ("spark streaming source", r"python_streaming_source_runner"),
    ("spark driver (lagwatch stream)", r"(?:shell|lagwatch)\.cli .* stream\b"),
    ("api + alerts", r"(?:shell|lagwatch)\.cli .* api\b"),
    ("alert engine", r"(?:shell|lagwatch)\.cli .* alerts\b"),
    ("dashboard (streamlit)", r"streamlit run"),
    ("dashboard launcher", r"(?:shell|lagwatch)\.cli .* dashboard\b"),
    ("demo", r"(?:shell|lagwatch)\.cli .* demo\b"),
    ("collectors", r"(?:shell|lagwatch)\.cli .* collect\b"),
    ("up (supervisor)", r"(?:shell|lagwatch)\.cli .* up\b"),
    ("broker (tansu)", r"tansu"),
)


def part_of(pid: int) -> str | None:
    """The stack part a process belongs to, by COMPONENTS (None once it is gone)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return next((name for name, pattern in COMPONENTS if re.search(pattern, command)), "other") if command else None


def footprint(root: int) -> dict[str, tuple[float, float, int]]:
    """Component -> (RSS MB, PSS MB, processes) over `root`'s process tree."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for pid in [root, *(proc.pid for proc in descendants(root))]:
        label = part_of(pid)
        if label is None:
            continue
        rss, pss = rss_pss_kb(pid)
        entry = totals[label]
        entry[0], entry[1], entry[2] = entry[0] + rss / 1024, entry[1] + pss / 1024, entry[2] + 1
    return {name: (v[0], v[1], int(v[2])) for name, v in totals.items()}


def run() -> list[Result]:
    return measure("lagwatch up (demo)", LocalStack)


def measure(label: str, stack: Callable[[Path], LocalStack]) -> list[Result]:
    """Start `stack` in a scratch folder, wait STEADY_S after up, and give its rows under `label`."""
    with (
        tempfile.TemporaryDirectory(prefix="lagwatch-bench-footprint-") as work,
        stack(Path(work)).running() as process,
    ):
        time.sleep(STEADY_S)
        parts = footprint(process.pid)
    rss = sum(v[0] for v in parts.values())
    pss = sum(v[1] for v in parts.values())
    steady = f"{STEADY_S:.0f} s after up"
    results = [
        Result(
            f"{label}: RSS of every process",
            rss,
            "MB",
            BAR_MB,
            "max",
            f"{steady}; Burrow on the same workload: {BURROW_MB:.0f} MB with ZooKeeper",
        ),
        Result(f"{label}: PSS of every process", pss, "MB", None, note="shared pages split"),
    ]
    for name, (part_rss, part_pss, count) in sorted(parts.items(), key=lambda item: -item[1][0]):
        note = f"PSS {part_pss:.0f} MB, {count} process(es)"
        results.append(Result(f"{label}: RSS {name}", part_rss, "MB", None, note=note))
    return results


if __name__ == "__main__":
    for result in run():
        print(f"{result.name}: {result.figure:,.0f} {result.unit} ({result.verdict}) {result.note}")
