"""Fleet: the live pipeline's cost per monitored group-partition at three sizes, fitted and projected.

`python -m bench fleet` (on request: about 10 minutes per size at the default durations).
Why: operators run thousands of groups; a per-part cost that is a fixed part plus a flat price
per group-partition is what lets docs/operations.md size a cluster of any fleet from three runs.

Per size (LAGWATCH_BENCH_FLEET_GP, group-partitions, default "2000,20000,200000"; 10 partitions
per group): one real Kafka broker (KAFKA_HOME, heap by size), the workload of
bench/fleet_workload.py as its own process (groups sharing at most 300 topics × 10 partitions,
most committing every collector interval, every 25th left lagging), and the pipeline as an
operator runs it: `lagwatch collect` and `lagwatch stream` as real processes on the shipped
config.toml with only the cluster and the paths overridden (interval_s = 15, commit_log "auto";
LAGWATCH_BENCH_FLEET_TIMEOUT_S sets collect.timeout_s for a run that asks).
After the first batch with input and a warm-up (LAGWATCH_BENCH_FLEET_WARM_UP_S, default 180),
over LAGWATCH_BENCH_FLEET_S (default 300) per part (collector; Spark job = driver, JVM and
Python workers; broker; workload): CPU share of a core (/proc/<pid>/stat of the process tree,
reaped children included), RSS at start, end and peak (sampled every few seconds); the job's
batches, their mean duration and the p95 of freshness_s from the lake's pipeline_progress; the
collector's cycle wall time from its `cycle:` log lines; lake bytes written, per day.

Fit over the sizes per part: CPU seconds per collector interval = a + b·gp (least squares);
b is reported in µs per group-partition per interval. Flatness: the marginal cost per
group-partition from the middle to the largest size over that from the smallest to the middle
(above 1: the price per group-partition rises with the fleet). Projection to 1,000,000
group-partitions from the fits (cores, RSS, lake per day).

Bars: the Spark job at most 15 % of a core at 5,000 group-partitions (from the fit); flatness
at most 1.2 per part; RSS growth at most 5 % per hour over the measurement, every part, every size.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import fleet_workload
from bench.bench_footprint import part_of
from bench.common import Result
from bench.fleet_report import SizeFigures, results
from bench.soak.sampler import cpu_s_by, directory_mb, freshness_p95, tree_figures
from harness.config_file import write_config
from harness.processes import ROOT, start_lagwatch
from harness.real_kafka import RealKafkaBroker
from shell.broker import die_with_parent

SIZES_ENV = "LAGWATCH_BENCH_FLEET_GP"
WARM_UP_ENV = "LAGWATCH_BENCH_FLEET_WARM_UP_S"
MEASURE_ENV = "LAGWATCH_BENCH_FLEET_S"
#: Unset: the shipped collect.timeout_s; set, the collector's cycle deadline for a run that asks (e.g. 14).
TIMEOUT_ENV = "LAGWATCH_BENCH_FLEET_TIMEOUT_S"
SAMPLE_EVERY_S = 5.0
#: The sizes measured so far, as JSON (bench/.data is where the soak keeps its record too).
RECORD = Path(__file__).with_name(".data") / "fleet-figures.json"
START_TIMEOUT_S = 900.0
CYCLE_LINE = re.compile(r"cycle: targets ok (\d+), failed (\d+).* samples published (\d+) in ([\d.]+) s")


def progress(message: str) -> None:
    print(f"bench_fleet: {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def sizes() -> list[int]:
    text = os.environ.get(SIZES_ENV, "2000,20000,200000")
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        hint = "give group-partition counts separated by commas, e.g. 2000,20000"
        raise ValueError(f"{SIZES_ENV}={text!r}: {hint}") from None
    if not values or values[0] < fleet_workload.PARTITIONS:
        raise ValueError(f"{SIZES_ENV}={text!r}: every size must be at least {fleet_workload.PARTITIONS}")
    return values


def seconds_env(name: str, default: float) -> float:
    text = os.environ.get(name, str(default))
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: give a number of seconds, e.g. {default:g}") from None


def broker_heap(gp: int) -> str:
    return "-Xmx2g" if gp > 50_000 else "-Xmx1g"


def write_pipeline_config(work: Path, bootstrap: str) -> Path:
    """The shipped config.toml with this run's broker and paths; interval and the rest as shipped."""
    data: dict[str, Any] = tomllib.loads((ROOT / "config.toml").read_text())
    data.setdefault("cluster", {})["bootstrap_servers"] = bootstrap
    data.setdefault("transport", {})["bootstrap_servers"] = bootstrap
    data["jmx"] = {"targets": []}
    data.setdefault("lake", {}).update(path=str(work / "lake"), duckdb_path=str(work / "lagwatch.duckdb"))
    data.setdefault("spark", {})["checkpoint_dir"] = str(work / "checkpoints")
    if os.environ.get(TIMEOUT_ENV):
        data.setdefault("collect", {})["timeout_s"] = seconds_env(TIMEOUT_ENV, 5)
    return write_config(work / "config.toml", data, [], [])


def stop_process(process: subprocess.Popen[bytes], name: str, group: bool) -> None:
    """SIGTERM; after 60 s SIGKILL (with its process group when it has its own session)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        progress(f"{name} did not stop within 60 s: killing it")
    if group:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the JVM or workers it left
    elif process.poll() is None:
        process.kill()
    process.wait()


@dataclass
class Running:
    """The processes of one size's run: workload, collector, Spark job (and the broker's pid)."""

    work: Path
    broker_pid: int
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def log(self, part: str) -> Path:
        return self.work / f"{part.replace(' ', '-')}.log"

    def start_workload(self, bootstrap: str, groups: int) -> None:
        with open(self.log("workload"), "ab") as out:
            self.processes["workload"] = subprocess.Popen(
                [sys.executable, "-m", "bench.fleet_workload", bootstrap, "--groups", str(groups)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )

    def start_pipeline(self, config: Path) -> None:
        self.processes["collector"] = start_lagwatch(config, self.log("collector"), "collect")
        self.processes["spark job"] = start_lagwatch(config, self.log("spark job"), "stream")

    def pids(self) -> dict[str, int]:
        return {"broker": self.broker_pid, **{part: p.pid for part, p in self.processes.items()}}

    def check_alive(self) -> None:
        for part, process in self.processes.items():
            if process.poll() is not None:
                tail = self.log(part).read_text(errors="replace")[-1500:]
                raise RuntimeError(f"{part} exited with {process.returncode}: {tail}")

    def stop(self) -> None:
        for part in ("collector", "spark job", "workload"):
            if part in self.processes:
                stop_process(self.processes[part], part, group=part != "workload")


def wait_for(what: str, running: Running, ready: Callable[[], bool], timeout_s: float = START_TIMEOUT_S) -> None:
    started = time.monotonic()
    while not ready():
        running.check_alive()
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"{what}: not within {timeout_s:.0f} s (logs in {running.work})")
        time.sleep(2)
    progress(f"{what} after {time.monotonic() - started:.0f} s")


def workload_ready(running: Running) -> bool:
    return "ready:" in running.log("workload").read_text(errors="replace")


def lake_has_input(lake: Path) -> bool:
    """A batch with input rows in pipeline_progress: the job reads the samples topic."""
    import duckdb

    if not any((lake / "pipeline_progress").glob("date=2*/*.parquet")):
        return False
    with duckdb.connect() as con:
        row = con.execute(
            "SELECT count(*) FROM read_parquet(?, union_by_name = true) WHERE input_rows > 0",
            [(lake / "pipeline_progress").as_posix() + "/date=2*/*.parquet"],
        ).fetchone()
    return bool(row and row[0])


@dataclass
class Reading:
    """One look at every part: CPU seconds and RSS (MB) of its process tree."""

    at: float
    cpu_s: dict[str, float]
    rss_mb: dict[str, float]
    #: The Spark job's CPU seconds by process kind (JVM, Python workers, driver, …: footprint's part_of).
    spark_cpu_s: dict[str, float] = field(default_factory=dict)


def read_parts(pids: dict[str, int]) -> Reading:
    figures = {part: tree_figures(pid) for part, pid in pids.items()}
    return Reading(
        time.monotonic(),
        {p: f.cpu_s for p, f in figures.items()},
        {p: f.rss_mb for p, f in figures.items()},
        cpu_s_by(pids["spark job"], part_of) if "spark job" in pids else {},
    )


def measure_interval(running: Running, measure_s: float) -> list[Reading]:
    """A reading of every part every few seconds over `measure_s` (first and last at its ends)."""
    pids = running.pids()
    readings = [read_parts(pids)]
    while (elapsed := time.monotonic() - readings[0].at) < measure_s:
        time.sleep(min(SAMPLE_EVERY_S, measure_s - elapsed))
        running.check_alive()
        readings.append(read_parts(pids))
    return readings


def collector_cycles(log_text: str) -> tuple[list[float], int, int]:
    """(wall time of each cycle, samples of the last one, cycles with a failed target) from `cycle:` lines."""
    matches = CYCLE_LINE.findall(log_text)
    return [float(m[3]) for m in matches], int(matches[-1][2]) if matches else 0, sum(int(m[1]) > 0 for m in matches)


def batch_figures(lake: Path, since: float) -> tuple[int, float]:
    """(batches with input, their mean duration in s) reported since `since` (epoch s), every query."""
    import duckdb

    with duckdb.connect() as con:
        row = con.execute(
            "SELECT count(*), avg(batch_duration_ms) / 1000.0 FROM (SELECT DISTINCT ON (query, batch_id) "
            "batch_duration_ms FROM read_parquet(?, union_by_name = true) WHERE epoch(ts) >= ? AND input_rows > 0)",
            [(lake / "pipeline_progress").as_posix() + "/date=2*/*.parquet", since],
        ).fetchone()
    return (int(row[0]), float(row[1])) if row and row[0] else (0, float("nan"))


def commit_log_in_use(lake: Path) -> float:
    """The collector's newest commit_log_in_use in metrics_10s: 1 when it read the commit log (NaN: no sample)."""
    import duckdb

    with duckdb.connect() as con:
        row = con.execute(
            "SELECT arg_max(last, window_start) FROM read_parquet(?, union_by_name = true) "
            "WHERE metric = 'commit_log_in_use'",
            [(lake / "metrics_10s").as_posix() + "/date=2*/*.parquet"],
        ).fetchone()
    return float(row[0]) if row and row[0] is not None else float("nan")


def workload_line(running: Running, offset: int) -> str:
    """The workload's cycle lines written during the measurement, summarised."""
    text = running.log("workload").read_text(errors="replace")[offset:]
    took = [float(t) for t in re.findall(r"committed in ([\d.]+) s", text)]
    failed = sum(int(f) for f in re.findall(r", (\d+) partitions refused", text))
    if not took:
        return "no workload cycle in the window"
    return f"{len(took)} workload cycles, {statistics.median(took):.1f} s median, {failed} partitions refused"


def measure_size(running: Running, gp: int, lake: Path, measure_s: float) -> SizeFigures:
    """The measurement window of one size, every figure read from where the running parts keep it."""
    offsets = {part: running.log(part).stat().st_size for part in ("collector", "workload")}
    since, lake_before = time.time(), directory_mb(lake)
    readings = measure_interval(running, measure_s)
    first, last = readings[0], readings[-1]
    wall_s = last.at - first.at
    figures = SizeFigures(
        gp=gp,
        wall_s=wall_s,
        cpu_pct={p: 100 * (last.cpu_s[p] - first.cpu_s[p]) / wall_s for p in first.cpu_s},
        rss_start=first.rss_mb,
        rss_end=last.rss_mb,
        rss_peak={part: max(r.rss_mb[part] for r in readings) for part in first.rss_mb},
        rss_series={part: [r.rss_mb[part] for r in readings] for part in first.rss_mb},
        load=os.getloadavg()[0],
        spark_split_pct={k: 100 * (v - first.spark_cpu_s.get(k, 0.0)) / wall_s for k, v in last.spark_cpu_s.items()},
    )
    figures.lake_gb_per_day = (directory_mb(lake) - lake_before) / 1e3 / wall_s * 86_400
    figures.batches, figures.batch_mean_s = batch_figures(lake, since)
    figures.freshness_p95_s = freshness_p95(lake, since)[0] or float("nan")
    figures.commit_log_in_use = commit_log_in_use(lake)
    collector_text = running.log("collector").read_text(errors="replace")[offsets["collector"] :]
    figures.cycles, figures.cycle_samples, figures.cycles_failed = collector_cycles(collector_text)
    figures.workload_cycles = workload_line(running, offsets["workload"])
    return figures


@contextlib.contextmanager
def fleet_running(work: Path, gp: int) -> Iterator[tuple[Running, Path]]:
    """Broker, workload and pipeline for `gp` group-partitions; every process stopped on the way out."""
    groups = gp // fleet_workload.PARTITIONS
    with RealKafkaBroker(work_dir=work / "kafka", heap=broker_heap(gp)) as broker:
        running = Running(work, broker.pid or 0)
        try:
            progress(f"{gp:,} gp: {broker.name}; setting up {groups:,} groups (work dir {work})")
            running.start_workload(broker.bootstrap_servers, groups)
            wait_for(f"{gp:,} gp: workload ready", running, lambda: workload_ready(running))
            running.start_pipeline(write_pipeline_config(work, broker.bootstrap_servers))
            yield running, work / "lake"
        finally:
            running.stop()


def run_size(gp: int, warm_up_s: float, measure_s: float) -> SizeFigures:
    work = Path(tempfile.mkdtemp(prefix="lagwatch-bench-fleet-"))
    with fleet_running(work, gp) as (running, lake):
        wait_for(f"{gp:,} gp: first Spark batch with input", running, lambda: lake_has_input(lake))
        progress(f"{gp:,} gp: warming up {warm_up_s:.0f} s, then measuring {measure_s:.0f} s")
        time.sleep(warm_up_s)
        running.check_alive()
        figures = measure_size(running, gp, lake, measure_s)
    shutil.rmtree(work, ignore_errors=True)  # kept (and named above) when the run failed
    progress(f"{gp:,} gp: " + ", ".join(f"{p} {v:.1f} %" for p, v in figures.cpu_pct.items()))
    return figures


def shipped_interval_s() -> float:
    return float(tomllib.loads((ROOT / "config.toml").read_text())["collect"]["interval_s"])


def save(figures: list[SizeFigures]) -> None:
    """Every size measured so far, so a run stopped at the largest size keeps the others."""
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps([asdict(f) for f in figures], indent=1))


def stop_on_sigterm() -> None:
    """SIGTERM (a stopped bench) unwinds like an error, so every process and broker is stopped on the way out."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def run() -> list[Result]:
    stop_on_sigterm()
    chosen, warm_up_s, measure_s = sizes(), seconds_env(WARM_UP_ENV, 180), seconds_env(MEASURE_ENV, 300)
    progress(f"sizes {', '.join(f'{gp:,}' for gp in chosen)} gp; load average {os.getloadavg()[0]:.1f}")
    figures: list[SizeFigures] = []
    for gp in chosen:
        figures.append(run_size(gp, warm_up_s, measure_s))
        save(figures)
    return results(figures, shipped_interval_s())


if __name__ == "__main__":
    for row in run():
        print(f"{row.name}: {row.figure:,.2f} {row.unit} ({row.verdict}) {row.note}")
