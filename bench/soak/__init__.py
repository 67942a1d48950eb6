"""Soak: `lagwatch up` on a real Kafka broker for an hour (`python -m bench soak [--minutes N]`).

Does Lagwatch stay flat over hours, as a monitor running for months must? The stack runs as an
operator runs it (bench/soak/stack.py: real broker, broker JMX, 5 s collector interval) with
the demo's groups and 500 extra consumer groups × 10 partitions whose offsets move every cycle
(bench/soak/workload.py). Every minute the sampler records memory, CPU, lake, checkpoint,
freshness and serving times (bench/soak/sampler.py, browser.py); at the end the bars are judged
(bench/soak/bars.py) and every measure is charted in bench/soak-report.html (report.py).

Not in the default `python -m bench` run (it takes an hour): name it. Its length comes from
`--minutes` (passed on by `python -m bench` as LAGWATCH_SOAK_MINUTES), 60 by default.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.common import Result
from bench.soak import bars
from bench.soak.browser import PageTimer
from bench.soak.report import write_report
from bench.soak.sampler import (
    Minute,
    directory_mb,
    false_alarms,
    freshness_p95,
    lake_figures,
    metrics_render_ms,
    minute_from_dict,
    newest_batch_id,
    tree_figures,
)
from bench.soak.stack import COLLECT_INTERVAL_S, SoakStack
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config, load_config
from shell.broker import die_with_parent
from shell.demo import GROUPS as DEMO_GROUPS

MINUTES_ENV = "LAGWATCH_SOAK_MINUTES"
DEFAULT_MINUTES = 60.0
SAMPLE_EVERY_S = 60.0
ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "bench" / ".data" / "soak-record.json"
#: The run's folder (config, lake, checkpoints, every log), kept after the run for a look at
#: what happened; the next run starts it afresh. Git-ignored with the rest of bench/.data.
WORK = ROOT / "bench" / ".data" / "soak"
#: The demo's groups whose alerts are meant (slow, stopped, stalled, rewinding).
UNHEALTHY_GROUPS = frozenset(g.group_id for g in DEMO_GROUPS if g.behaviour != "healthy")


def measure_on_idle_cpu() -> None:
    """The measuring (this process, its lake queries and chromium) runs only on CPU the stack,
    broker and workload leave idle: the browser stands for an operator's own machine and the
    queries for a monitoring host, neither of which shares Lagwatch's cores in production. A nice
    value would not hold: chromium, run as root, sets its own main and GPU processes to -8."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def progress(message: str) -> None:
    print(f"soak: {message}", file=sys.stderr, flush=True)


def soak_minutes() -> float:
    return float(os.environ.get(MINUTES_ENV) or DEFAULT_MINUTES)


def start_workload(bootstrap: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "bench.soak.workload", bootstrap, "--interval-s", f"{COLLECT_INTERVAL_S:g}"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )


class Soak:
    """The running stack and what is sampled from it."""

    def __init__(self, stack: SoakStack, config: Config, pages: PageTimer) -> None:
        self.stack = stack
        self.config = config
        self.pages = pages
        self.lake = config.resolve_path(config.lake.path)
        self.checkpoints = config.resolve_path(config.spark.checkpoint_dir)
        self.started = time.monotonic()
        self.last_sample_epoch: float | None = None

    def sample(self) -> Minute:
        state = self.stack.state()
        now = time.time()
        minute = Minute(t_min=(time.monotonic() - self.started) / 60)
        minute.processes = {name: tree_figures(pid) for name, pid in state["components"].items()}
        minute.tables = lake_figures(self.lake)
        minute.checkpoint_mb = directory_mb(self.checkpoints)
        minute.state_store_mb = directory_mb(self.checkpoints, only="state")
        if self.last_sample_epoch is not None:  # the first sample has no minute behind it
            minute.freshness_p95_s, minute.freshness_batches = freshness_p95(self.lake, self.last_sample_epoch)
        self.last_sample_epoch = now
        minute.batch_id = newest_batch_id(self.lake)
        minute.metrics_ms, minute.metrics_bytes = metrics_render_ms(str(state["api_url"]))
        minute.page_ms = self.pages.times()
        minute.load_average = os.getloadavg()[0]
        minute.false_alarms = false_alarms(self.lake, UNHEALTHY_GROUPS)
        return minute


def _line(minute: Minute) -> str:
    rss = ", ".join(f"{name} {f.rss_mb:.0f}" for name, f in minute.processes.items())
    fresh = "-" if minute.freshness_p95_s is None else f"{minute.freshness_p95_s:.1f} s"
    pages = ", ".join(f"{p} {'-' if v is None else f'{v:.0f}'}" for p, v in minute.page_ms.items())
    return (
        f"t={minute.t_min:.1f} min  RSS MB: {rss}; freshness p95 {fresh} ({minute.freshness_batches} batches); "
        f"/metrics {minute.metrics_ms or float('nan'):.0f} ms; pages ms: {pages}; load {minute.load_average:.1f}; "
        f"false alarms {sum(minute.false_alarms.values())}"
    )


def record(soak: Soak, minutes: float) -> list[Minute]:
    """Sample every minute until `minutes` have passed; stops early (raising) if `up` exits."""
    taken: list[Minute] = []
    for index in range(int(minutes) + 1):
        wait_s = soak.started + index * SAMPLE_EVERY_S - time.monotonic()
        if wait_s > 0:
            time.sleep(wait_s)
        assert soak.stack.process is not None
        if soak.stack.process.poll() is not None:
            raise RuntimeError(f"lagwatch up exited with {soak.stack.process.returncode}: {soak.stack.logs()}")
        taken.append(soak.sample())
        progress(_line(taken[-1]))
    return taken


def stop_stack(stack: SoakStack) -> None:
    """Ctrl-C, as an operator stops it; whatever is left after that is killed."""
    if stack.process is None:
        return
    stack.process.send_signal(signal.SIGINT)
    try:
        stack.process.wait(60)
        stack.wait_gone(30)
    except (subprocess.TimeoutExpired, AssertionError):
        stack.kill_everything()
        stack.process.wait()


def save_record(minutes: list[Minute]) -> None:
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps([dataclasses.asdict(m) for m in minutes], indent=0))


def judge(minutes: list[Minute], config: Config) -> list[Result]:
    """The bars over a record, and the report beside bench/results.md."""
    results = bars.results(minutes, config)
    path = write_report(minutes, results, bars.compaction_bound(config))
    progress(f"report: {path}; record: {RECORD}")
    return results


def judge_saved_record() -> list[Result]:
    """The last run's record judged again (after a change to the bars or the report), no stack started."""
    minutes = [minute_from_dict(m) for m in json.loads(RECORD.read_text())]
    return judge(minutes, load_config(WORK / "config.toml"))


def run() -> list[Result]:
    length = soak_minutes()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    broker = RealKafkaBroker(work_dir=WORK / "kafka").start()
    workload = start_workload(broker.bootstrap_servers, WORK / "workload.log")
    stack = SoakStack(WORK, broker.bootstrap_servers, broker.jmx_port)
    try:
        progress(f"{broker.name}; starting lagwatch up in {WORK} for {length:g} minutes")
        stack.start()
        stack.wait_up()
        measure_on_idle_cpu()
        config = load_config(WORK / "config.toml")
        with PageTimer(str(stack.state()["dashboard_url"])) as pages:
            minutes = record(Soak(stack, config, pages), length)
    finally:
        stop_stack(stack)
        workload.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            workload.wait(30)
        workload.kill()
        broker.stop()
    save_record(minutes)
    return judge(minutes, config)
