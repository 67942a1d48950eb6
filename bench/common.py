"""The one result type every benchmark returns, and how the table is printed.

A benchmark module exposes ``run() -> list[Result]``. Each Result is a figure measured on
this machine against its bar (or None when the figure is stated, not judged); each module
says where its bar comes from, and docs/operations.md ("Sizing") reads the figures for operators.
"""

from __future__ import annotations

import datetime as dt
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Result:
    name: str
    figure: float
    unit: str
    #: The bar to meet; None means the figure is reported, not judged.
    bar: float | None = None
    #: "min": figure must be >= bar; "max": figure must be <= bar.
    direction: str = "min"
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.bar is None:
            return "stated"
        met = self.figure >= self.bar if self.direction == "min" else self.figure <= self.bar
        return "pass" if met else "short"

    def bar_text(self) -> str:
        if self.bar is None:
            return "-"
        return f"{'≥' if self.direction == 'min' else '≤'} {self.bar:,g} {self.unit}"


def run_module(module: str, queue: Any) -> None:
    """Child-process entry of `python -m bench`: run `module.run()` and send its results back.

    Lives here, not in bench/__main__.py: a spawned child imports its target by module name,
    and `__main__` of `python -m bench` is not importable under that name.
    """
    import importlib

    try:
        results = importlib.import_module(module).run()
        queue.put(("ok", [r.__dict__ for r in results]))
    except Exception as exc:
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


def peak_rss_mb_children() -> float:
    """Peak RSS of waited-for child processes (MB), e.g. a Spark JVM or a broker."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def peak_rss_mb_self() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_pss_kb(pid: int) -> tuple[int, int]:
    """(Rss, Pss) in kB from /proc/<pid>/smaps_rollup; (0, 0) for a process that just went away.

    PSS splits a page shared by several processes (forked workers, libraries) between them, so a
    process tree's PSS does not count the same page twice; RSS counts it in each, as `ps` does.
    """
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def format_table(rows: list[tuple[str, Result]]) -> str:
    lines = [
        "| area | benchmark | figure | bar | verdict | note |",
        "|---|---|---|---|---|---|",
    ]
    for area, r in rows:
        lines.append(f"| {area} | {r.name} | {r.figure:,.2f} {r.unit} | {r.bar_text()} | {r.verdict} | {r.note} |")
    return "\n".join(lines)


#: Rows a generated lake's writer takes from DuckDB at once: a fleet's day at once would not fit in memory.
SLICE_ROWS = 5_000_000


def minute_slices(start: dt.datetime, end: dt.datetime, per_minute: int) -> list[tuple[dt.datetime, dt.datetime]]:
    """[start, end) cut into whole minutes of at most about SLICE_ROWS rows (at `per_minute` rows
    a minute) that never cross a UTC day, the lake's partition."""
    step = dt.timedelta(minutes=max(1, min(24 * 60, SLICE_ROWS // per_minute)))
    slices = []
    while start < end:
        day_end = start.replace(hour=0, minute=0, second=0, microsecond=0) + dt.timedelta(days=1)
        stop = min(start + step, day_end, end)
        slices.append((start, stop))
        start = stop
    return slices
