"""`python -m bench [name ...] [--minutes N]`: run the benchmarks, print one table, write bench/results.md.

Each benchmark runs in its own process so one's JVM or memory does not skew another's figures.
Benchmarks in ON_REQUEST run only when named (the hour-long soak would make every `make bench`
an hour longer); `--minutes` sets the soak's length.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import platform
import sys
import time
from pathlib import Path
from queue import Empty
from typing import Any

from bench.common import Result, format_table, run_module

#: area -> module exposing run() -> list[Result]
BENCHMARKS: dict[str, str] = {
    "admin collector": "bench.bench_admin",
    "many clusters": "bench.bench_clusters",
    "membership": "bench.bench_membership",
    "commit log": "bench.bench_commit_log",
    "jmx collector": "bench.bench_jmx",
    "spark job": "bench.bench_spark",
    "spark sources": "bench.bench_spark_sources",
    "lag state": "bench.bench_lag_state",
    "dashboard": "bench.bench_dashboard",
    "alerts": "bench.bench_alerts",
    "alert backtest": "bench.bench_backtest",
    "http api": "bench.bench_api",
    "local stack": "bench.bench_stack",
    "footprint": "bench.bench_footprint",
    "steady state": "bench.bench_steady",
    "detection": "bench.bench_detection",
}

#: area -> module, run only when named on the command line (not by a plain `python -m bench`).
ON_REQUEST: dict[str, str] = {
    "soak": "bench.soak",
    "batch cost": "bench.bench_batch_cost",
    "lean footprint": "bench.bench_footprint_lean",
    "fleet": "bench.bench_fleet",
    "pages": "bench.bench_pages",
}


def run_one(area: str, module: str) -> list[Result]:
    """Run one benchmark module in a fresh interpreter; a crash becomes a "(failed)" row, never a hang."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=run_module, args=(module, queue))
    started = time.monotonic()
    process.start()
    outcome: tuple[str, Any] | None = None
    while outcome is None and (process.is_alive() or not queue.empty()):
        try:
            outcome = queue.get(timeout=1)
        except Empty:
            continue
    process.join()
    print(f"bench: {area} finished in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    status, payload = outcome or ("error", f"the benchmark process died (exit code {process.exitcode})")
    if status == "error":
        return [Result(name="(failed)", figure=float("nan"), unit="", bar=0, note=str(payload)[:200])]
    return [Result(**r) for r in payload]


def chosen_benchmarks(names: list[str]) -> dict[str, str]:
    """The benchmarks `names` pick (by area or module substring); every default one when none is named."""
    if not names:
        return dict(BENCHMARKS)
    every = {**BENCHMARKS, **ON_REQUEST}
    return {area: mod for area, mod in every.items() if any(n in area or n in mod for n in names)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("names", nargs="*", help="benchmarks to run (area or module name; default: all but soak)")
    parser.add_argument("--minutes", type=float, help="soak length in minutes (default 60)")
    args = parser.parse_args(argv)
    if args.minutes is not None:
        from bench.soak import MINUTES_ENV

        os.environ[MINUTES_ENV] = f"{args.minutes:g}"  # the spawned benchmark process inherits it
    chosen = chosen_benchmarks(args.names)
    rows: list[tuple[str, Result]] = []
    for area, module in chosen.items():
        print(f"bench: running {area} ({module})", file=sys.stderr, flush=True)
        rows.extend((area, r) for r in run_one(area, module))
    table = format_table(rows)
    header = (
        f"# Lagwatch benchmarks\n\n{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({multiprocessing.cpu_count()} cores, Python {platform.python_version()})\n\n"
    )
    Path(__file__).with_name("results.md").write_text(header + table + "\n")
    Path(__file__).with_name("results.json").write_text(
        json.dumps([{"area": a, **r.__dict__, "verdict": r.verdict} for a, r in rows], indent=1)
    )
    print(table)
    return 1 if any(r.verdict == "short" and r.name == "(failed)" for _, r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
