"""Detection: how soon the lag judgement notices what happens to a consumer group, end to end.

Setup per collector interval (printed as it goes): a real Apache Kafka broker
(harness/real_kafka.py, KAFKA_HOME as for the tests: 4.3.1 by default); the pipeline as an
operator runs it, each part its own `lagwatch` process on the shipped config.toml: `collect`
(admin collector, no JMX targets; `collect.commit_log = "auto"` reads `__consumer_offsets`, so
commits and membership changes come from the log as they happen), `stream` (the Spark job,
local[2], 2 s trigger) and `alerts`
delivering to a real HTTP webhook receiver. Only the cluster, the paths, the receiver and the
alert rules are overridden (plus `collect.interval_s` in the second run); `[lag]` and the
other `[collect]` keys are the shipped ones. The shipped default rules judge group status at
one level only (STALL and worse, one alert per group), so the bench configures one status
rule per status instead, and groups notifications per consumer group (`group_by` gains
`group_id`), so one group's alert never waits behind another's `group_interval`.

Workload (bench/detection_workload.py): one topic of 4 partitions per scenario, a producer
process writing 20 records/s into every partition throughout, and one confluent-kafka
consumer process per group (auto-commit every 5 s; the classic group protocol unless named
kip848, which uses KIP-848's `group.protocol=consumer`). Every group runs healthy until the lake
has OK rows for it and two more collector intervals have passed; then, at T (this process's
wall clock when it makes the change), each scenario's change is made:

- healthy: none: every non-OK status the lake shows for it is a false alarm;
- slow: it consumes at half the produce rate → WARN;
- dead: the consumer closes (commit, LeaveGroup) and exits → STOP;
- dead-kip848: the same with a KIP-848 consumer (its leave is a heartbeat with member epoch -1) → STOP;
- dead-killed: SIGKILL, no LeaveGroup: the broker keeps the member until session.timeout.ms
  (45 s, librdkafka's default) → STALL while it is still a member, then STOP;
- stuck: it stops calling poll() and stays alive (a member until max.poll.interval.ms) → STALL;
- rewinding: it seeks every partition back 500 records and commits that → REWIND.

Measured per scenario and status: from T to the first `group_status` row read from the lake
(DuckDB over the views, polled every 0.5 s) with that status and updated_at ≥ T, and from T to
the arrival at the webhook of that status's alert for the group, raised after T. Bar where group
membership decides the status (STALL, and STOP after a clean exit at a non-shipped interval): 2
collector intervals + 1 trigger. At the shipped interval a clean leave's STOP is barred at
LEAVE_BAR_S, as the commit log tells the leave without waiting for collector cycles. The run also
checks that the collector read committed offsets from the commit log. The other figures are
stated. A status not seen within 4 intervals + 90 s of T (plus the alert engine's evaluation
period and group_wait, for the webhook) is reported as not detected (NaN). The scenarios of one
interval run at once on one broker. bench/RECORDS.md ("Detection") describes the run for
readers of the figures; `python -m bench.bench_detection --interval 15 --only dead` runs a part.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Result
from harness.config_file import write_config
from harness.processes import ROOT, start_lagwatch
from harness.real_kafka import RealKafkaBroker
from harness.webhook_receiver import WebhookReceiver
from lagwatch.config import Config, duration_seconds
from lagwatch.kafka import ensure_topic
from lagwatch.lake import connect_readonly
from lagwatch.vocabulary import STATUS_ORDER, STATUS_SEVERITY
from shell.broker import die_with_parent, free_port
from shell.cli import load_and_validate

#: Collector intervals to run: the shipped default (config.toml) and a short one.
INTERVALS_S: tuple[float | None, ...] = (None, 5.0)
PARTITIONS = 4
POLL_S = 0.5
#: Healthy collector cycles the lake shows for every group before the change.
WARMUP_CYCLES = 3
#: At most this many more collector intervals are given for every group to be OK at once before the change.
SETTLE_INTERVALS = 4
#: Start-up bound: broker, Spark and the first rows in the lake (on a loaded 2-core host).
START_TIMEOUT_S = 360.0
#: librdkafka's default session.timeout.ms: a SIGKILLed member stays in the group this long.
SESSION_TIMEOUT_S = 45.0
#: Bar on STOP after the last member leaves cleanly, at the shipped interval: the log publishes the leave.
LEAVE_BAR_S = 10.0
#: How often the log shows every group's newest status, lag and member count.
SUMMARY_EVERY_S = 15.0
GROUP_PREFIX = "detect-"
SUMMARY = "Consumer group {group_id} is {status}: {reason}"
SUMMARY_STATUS = re.compile(r" is ([A-Z]+): ")


def progress(message: str) -> None:
    print(f"bench_detection: {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Scenario:
    name: str
    #: The consumer's behaviour (bench/detection_workload.py); a killed one is healthy until killed.
    behaviour: str
    #: Statuses to detect after the change, in the order they should come.
    expected: tuple[str, ...]
    #: Statuses group membership decides: judged against 2 intervals + 1 trigger.
    barred: tuple[str, ...] = ()
    #: The change is SIGKILL instead of SIGUSR1.
    killed: bool = False
    #: The change is the group's last member leaving cleanly: its barred STOP gets LEAVE_BAR_S at the shipped interval.
    leaves: bool = False
    #: The consumer's group.protocol (bench/detection_workload.py PROTOCOLS).
    protocol: str = "classic"

    @property
    def group(self) -> str:
        return f"{GROUP_PREFIX}{self.name}"

    @property
    def topic(self) -> str:
        return f"{GROUP_PREFIX}{self.name}"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("healthy", "healthy", ()),
    Scenario("slow", "slow", ("WARN",)),
    Scenario("dead", "dead", ("STOP",), barred=("STOP",), leaves=True),
    Scenario("dead-kip848", "dead", ("STOP",), barred=("STOP",), leaves=True, protocol="consumer"),
    Scenario("dead-killed", "healthy", ("STALL", "STOP"), barred=("STALL",), killed=True),
    Scenario("stuck", "stuck", ("STALL",), barred=("STALL",)),
    Scenario("rewinding", "rewinding", ("REWIND",)),
)


@dataclass
class Detection:
    """When one expected status of one scenario was first seen after its change at `changed_at`."""

    scenario: Scenario
    status: str
    changed_at: float
    timing: Timing
    #: The group's newest status in the lake when the change was made (OK after a clean warm-up).
    status_at_change: str
    lake_seen_at: float | None = None
    lake_updated_at: float | None = None
    webhook_at: float | None = None
    #: The group's newest lake row while the status is still awaited (for the report when it never comes).
    newest: str = ""

    @property
    def lake_deadline(self) -> float:
        return self.changed_at + self.timing.lake_give_up_s

    @property
    def webhook_deadline(self) -> float:
        return self.changed_at + self.timing.webhook_give_up_s

    @property
    def settled(self) -> bool:
        """Both seen, or each either seen or past its deadline."""
        now = time.time()
        lake = self.lake_seen_at is not None or now > self.lake_deadline
        return lake and (self.webhook_at is not None or now > self.webhook_deadline)


@dataclass
class GroupRow:
    group: str
    status: str
    reason: str
    updated_at: float
    members: int | None
    total_lag: int | None


@dataclass
class Workload:
    """The producer and consumer processes, each with its own log."""

    work: Path
    bootstrap: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def _start(self, name: str, *args: str) -> None:
        with open(self.work / f"{name}.log", "ab") as out:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "bench.detection_workload", *args, "--bootstrap", self.bootstrap],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )

    def start(self, scenarios: tuple[Scenario, ...]) -> None:
        settings = {"bootstrap.servers": self.bootstrap}
        for scenario in scenarios:
            ensure_topic(settings, scenario.topic, PARTITIONS)
        self._start("producer", "produce", "--partitions", str(PARTITIONS), *(s.topic for s in scenarios))
        for s in scenarios:
            self._start(s.name, "consume", "--group", s.group, "--topic", s.topic, "--partitions", str(PARTITIONS),
                        "--behaviour", s.behaviour, "--protocol", s.protocol)  # fmt: skip

    def change(self, scenario: Scenario) -> float:
        """Make the scenario's change; returns T (epoch seconds)."""
        process = self.processes[scenario.name]
        if process.poll() is not None:
            log = self.log(scenario.name)
            raise RuntimeError(f"consumer {scenario.name} exited early ({process.returncode}): {log}")
        changed_at = time.time()
        process.send_signal(signal.SIGKILL if scenario.killed else signal.SIGUSR1)
        return changed_at

    def acted_after_s(self, scenario: Scenario, changed_at: float) -> str:
        """How long after T the consumer said it had changed (a killed one says nothing)."""
        if scenario.killed:
            return "killed"
        said = re.findall(r"^changed (\d+)$", self.log(scenario.name), re.MULTILINE)
        return f"+{int(said[-1]) / 1000 - changed_at:.2f} s" if said else "no answer yet"

    def log(self, name: str) -> str:
        path = self.work / f"{name}.log"
        return path.read_text(errors="replace")[-1500:] if path.exists() else ""

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass
class Pipeline:
    """`lagwatch collect`, `stream` and `alerts` on one config, each its own process group."""

    work: Path
    config_path: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self) -> None:
        for command in ("collect", "stream", "alerts"):
            self.processes[command] = start_lagwatch(self.config_path, self.work / f"{command}.log", command)

    def check_alive(self) -> None:
        for command, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"lagwatch {command} exited with {process.returncode}: {self.log(command)}")

    def log(self, command: str) -> str:
        return (self.work / f"{command}.log").read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        """SIGTERM as an operator would; what is still running after 60 s is killed with its group."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for command, process in self.processes.items():
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                progress(f"lagwatch {command} did not stop within 60 s: killing its process group")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # its own session: the JVM or workers it left
            process.wait()


def rule_name(status: str) -> str:
    return f"ConsumerGroup{status.title()}"


def status_rules() -> list[dict[str, Any]]:
    """One status rule per non-OK status, so each status a group reaches is a new notification."""
    return [
        {"name": rule_name(status), "kind": "status", "metric": "status", "by": ["group_id"],
         "level": status, "receivers": ["bench"], "summary": SUMMARY}
        for status in STATUS_ORDER[1:]
    ]  # fmt: skip


def shipped_config() -> dict[str, Any]:
    return tomllib.loads((ROOT / "config.toml").read_text())


def write_pipeline_config(work: Path, bootstrap: str, webhook_url: str, interval_s: float | None) -> Config:
    """The shipped config.toml with the broker, paths, receiver and rules of this run; validated."""
    data = shipped_config()
    data.setdefault("cluster", {})["bootstrap_servers"] = bootstrap
    data.setdefault("transport", {})["bootstrap_servers"] = bootstrap
    data["jmx"] = {"targets": []}
    data.setdefault("lake", {}).update(path=str(work / "lake"), duckdb_path=str(work / "lagwatch.duckdb"))
    data.setdefault("spark", {})["checkpoint_dir"] = str(work / "checkpoints")
    if interval_s is not None:
        data.setdefault("collect", {})["interval_s"] = interval_s
    alerts = data.setdefault("alerts", {})
    alerts.pop("rules", None)
    alerts.pop("receivers", None)
    alerts.update(state_dir=str(work / "alerts"), use_default_rules=False)
    alerts["group_by"] = [*alerts.get("group_by", ["alertname", "cluster"]), "group_id"]
    path = write_config(work / "config.toml", data, status_rules(), [{"name": "bench", "url": webhook_url}])
    return load_and_validate(str(path))


def commit_log_in_use(config: Config) -> float:
    """The collector's newest `commit_log_in_use` in the lake: 1 when it read the commit log (NaN: no sample)."""
    con = connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        row = con.execute(
            "SELECT arg_max(last, window_start) FROM metrics_10s WHERE metric = 'commit_log_in_use'"
        ).fetchone()
    finally:
        con.close()
    return float(row[0]) if row and row[0] is not None else math.nan


def lake_rows(config: Config, since: float) -> list[GroupRow]:
    con = connect_readonly(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))
    try:
        rows = con.execute(
            "SELECT group_id, status, reason, epoch_ms(updated_at) / 1000.0, members, total_lag FROM group_status "
            "WHERE starts_with(group_id, $prefix) AND updated_at >= to_timestamp($since) ORDER BY updated_at",
            {"prefix": GROUP_PREFIX, "since": since},
        ).fetchall()
    finally:
        con.close()
    return [GroupRow(g, s, r or "", float(u), m, lag) for g, s, r, u, m, lag in rows]


@dataclass(frozen=True)
class Delivered:
    """One firing alert as the receiver got it."""

    arrived_at: float
    alertname: str
    group: str
    #: The group's status the alert names (its summary), when it was sent.
    status: str
    #: When the alert started firing (startsAt).
    starts_at: float

    def announces(self, d: Detection) -> bool:
        """This is the alert on d's status, raised after d's change: an alert raised before the change
        (a warm-up false alarm, say) that names the status only because its text was refreshed is not.
        A status rule fires at its level or worse, so a STALL alert sent once the group is already
        STOP (its group_wait outlasted the STALL) names STOP, and still announces the STALL."""
        return (self.alertname == rule_name(d.status) and self.group == d.scenario.group
                and self.status in STATUS_SEVERITY and STATUS_SEVERITY[self.status] >= STATUS_SEVERITY[d.status]
                and self.starts_at >= d.changed_at)  # fmt: skip


def webhook_alerts(receiver: WebhookReceiver) -> Iterator[Delivered]:
    """Every firing alert the receiver got whose summary names a status."""
    for request in receiver.received():
        for alert in request.json().get("alerts", []):
            match = SUMMARY_STATUS.search(alert.get("annotations", {}).get("summary", ""))
            if alert.get("status") == "firing" and match:
                labels = alert["labels"]
                starts_at = dt.datetime.fromisoformat(alert["startsAt"]).timestamp()
                yield Delivered(request.received_at, labels.get("alertname", ""), labels.get("group_id", ""),
                                match.group(1), starts_at)  # fmt: skip


class Watch:
    """Polls the lake and the receiver: logs status changes, records first detections after each
    change, and every row of the healthy group from the end of start-up on."""

    def __init__(self, config: Config, receiver: WebhookReceiver, since: float) -> None:
        self.config = config
        self.receiver = receiver
        self.since = since
        self.detections: list[Detection] = []
        self.latest: dict[str, str] = {}
        self.next_summary = 0.0
        #: From when the healthy group's rows count (0: not yet, start-up is still going on).
        self.healthy_since = 0.0
        #: updated_at -> status of every healthy-group row seen since `healthy_since`.
        self.healthy_rows: dict[float, str] = {}

    def poll(self) -> list[GroupRow]:
        now = time.time()
        rows = lake_rows(self.config, self.since)
        self._log_changes(rows)
        if self.healthy_since:
            healthy = f"{GROUP_PREFIX}healthy"
            self.healthy_rows.update(
                (r.updated_at, r.status) for r in rows if r.group == healthy and r.updated_at >= self.healthy_since
            )
        alerts = list(webhook_alerts(self.receiver))
        newest = {row.group: row for row in rows}
        for d in self.detections:
            if d.lake_seen_at is None and now <= d.lake_deadline:
                self._seen_in_lake(d, rows, now)
                if d.scenario.group in newest:
                    row = newest[d.scenario.group]
                    d.newest = f"{row.status}, lag {row.total_lag}, {row.members} members"
            if d.webhook_at is None:
                arrivals = [a.arrived_at for a in alerts if a.announces(d) and a.arrived_at <= d.webhook_deadline]
                if arrivals:
                    d.webhook_at = min(arrivals)
                    progress(f"{d.scenario.name}: {d.status} at the webhook after {d.webhook_at - d.changed_at:.1f} s")
        return rows

    @staticmethod
    def _seen_in_lake(d: Detection, rows: list[GroupRow], now: float) -> None:
        hit = next((r for r in rows if r.group == d.scenario.group and r.status == d.status
                    and r.updated_at >= d.changed_at), None)  # fmt: skip
        if hit:
            d.lake_seen_at, d.lake_updated_at = now, hit.updated_at
            progress(f"{d.scenario.name}: {d.status} in the lake after {now - d.changed_at:.1f} s "
                     f"(updated_at +{hit.updated_at - d.changed_at:.1f} s): {hit.reason}")  # fmt: skip

    def _log_changes(self, rows: list[GroupRow]) -> None:
        """Log each group's newest status when it differs from the one logged before, and every
        SUMMARY_EVERY_S a line with every group's status, lag and members."""
        newest = {row.group: row for row in rows}  # rows come in updated_at order
        if newest and time.time() >= self.next_summary:
            self.next_summary = time.time() + SUMMARY_EVERY_S
            progress("lake now: " + "; ".join(f"{r.group.removeprefix(GROUP_PREFIX)} {r.status} lag {r.total_lag} "
                                              f"members {r.members}" for r in newest.values()))  # fmt: skip
        for row in newest.values():
            if self.latest.get(row.group) != row.status:
                measured = time.strftime("%H:%M:%S", time.gmtime(row.updated_at))
                progress(f"lake: {row.group} is {row.status} (updated_at {measured} UTC, {row.members} members): "
                         f"{row.reason[:160]}")  # fmt: skip
            self.latest[row.group] = row.status

    def wait_for_warmup(self, pipeline: Pipeline, interval_s: float, scenarios: tuple[Scenario, ...]) -> None:
        """Every group OK in the lake, then WARMUP_CYCLES − 1 more collector intervals of running."""
        groups = {s.group for s in scenarios}
        ok: set[str] = set()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ok >= groups:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no OK row in the lake for {sorted(groups - ok)} within {START_TIMEOUT_S:.0f} s; "
                                   f"stream log: {pipeline.log('stream')}")  # fmt: skip
            pipeline.check_alive()
            ok |= {row.group for row in self.poll() if row.status == "OK"}
            time.sleep(POLL_S)
        self.healthy_since = time.time()
        progress(f"every group OK in the lake; {WARMUP_CYCLES - 1} more collector intervals of warm-up")
        self.watch_until(pipeline, self.healthy_since + (WARMUP_CYCLES - 1) * interval_s)
        settle_until = time.time() + SETTLE_INTERVALS * interval_s
        while time.time() < settle_until and set(self.latest.values()) != {"OK"}:
            pipeline.check_alive()
            self.poll()
            time.sleep(POLL_S)
        if set(self.latest.values()) != {"OK"}:
            progress(f"not every group OK at the change after {SETTLE_INTERVALS} more intervals: {self.latest}")

    def watch_until(self, pipeline: Pipeline, until: float) -> None:
        """Poll until `until` (epoch s), or until every detection is made or past its deadline."""
        while time.time() < until and not (self.detections and all(d.settled for d in self.detections)):
            pipeline.check_alive()
            self.poll()
            time.sleep(POLL_S)
        self.poll()


@dataclass(frozen=True)
class Timing:
    """A run's collector interval, and how long after a change each detection is waited for."""

    interval_s: float
    trigger_s: float
    #: Alert engine's delay on top of the lake: one evaluation period and the group_wait.
    alert_delay_s: float
    alert_text: str
    #: The collector interval is config.toml's: the run the issue's leave bar is set for.
    shipped: bool = False

    @property
    def bar_s(self) -> float:
        """Where group membership decides the status: 2 collector intervals + 1 trigger."""
        return 2 * self.interval_s + self.trigger_s

    def bar(self, scenario: Scenario, status: str) -> tuple[float | None, str]:
        """The bar on `status` after `scenario`'s change and how it is set (None: stated, not judged)."""
        if status not in scenario.barred:
            return None, ""
        if scenario.leaves and self.shipped:
            return LEAVE_BAR_S, f"bar = {LEAVE_BAR_S:g} s after a clean leave (the commit log tells it)"
        return self.bar_s, f"bar = 2 intervals + 1 trigger ({self.trigger_s:g} s)"

    @property
    def lake_give_up_s(self) -> float:
        return 4 * self.interval_s + 90

    @property
    def webhook_give_up_s(self) -> float:
        return self.lake_give_up_s + self.alert_delay_s

    @classmethod
    def of(cls, config: Config) -> Timing:
        every, wait = config.alerts.evaluate_every_s, duration_seconds(config.alerts.group_wait)
        text = f"alerts evaluated every {every:g} s, group_wait {wait:g} s"
        shipped = config.collect.interval_s == shipped_config()["collect"]["interval_s"]
        return cls(config.collect.interval_s, config.spark.trigger_s, every + wait, text, shipped)


def run_interval(
    interval_s: float | None, scenarios: tuple[Scenario, ...] = SCENARIOS
) -> tuple[Timing, list[Detection], dict[float, str], float]:
    """One broker and pipeline, every scenario at once; (timing, detections, healthy group's rows,
    the collector's newest commit_log_in_use at the change)."""
    work = Path(tempfile.mkdtemp(prefix="lagwatch-bench-detection-"))
    receiver = WebhookReceiver(port=free_port())
    receiver.start()
    try:
        with RealKafkaBroker(work_dir=work / "kafka") as broker:
            config = write_pipeline_config(work, broker.bootstrap_servers, receiver.url, interval_s)
            timing = Timing.of(config)
            progress(f"interval {timing.interval_s:g} s: {broker.name}, work dir {work}")
            watch = Watch(config, receiver, since=time.time())
            workload = Workload(work, broker.bootstrap_servers)
            pipeline = Pipeline(work, work / "config.toml")
            try:
                workload.start(scenarios)
                pipeline.start()
                watch.wait_for_warmup(pipeline, timing.interval_s, scenarios)
                log_in_use = commit_log_in_use(config)
                progress(f"commit_log_in_use {log_in_use:g}; before the change: "
                         + ", ".join(f"{g} {s}" for g, s in sorted(watch.latest.items())))  # fmt: skip
                changed = {scenario: workload.change(scenario) for scenario in scenarios}
                for scenario, changed_at in changed.items():
                    watch.detections += [
                        Detection(scenario, status, changed_at, timing, watch.latest.get(scenario.group, "none"))
                        for status in scenario.expected
                    ]
                watch.watch_until(pipeline, time.time() + 2)
                progress("consumers changed: " + ", ".join(f"{s.name} {workload.acted_after_s(s, t)}"
                                                           for s, t in changed.items()))  # fmt: skip
                progress(f"changes made; giving up {timing.lake_give_up_s:.0f} s after them "
                         f"({timing.webhook_give_up_s:.0f} s for the webhook)")  # fmt: skip
                watch.watch_until(pipeline, time.time() + timing.webhook_give_up_s)
            finally:
                workload.stop()
                pipeline.stop()
        shutil.rmtree(work, ignore_errors=True)  # kept (and named above) when the run failed
        return timing, watch.detections, watch.healthy_rows, log_in_use
    finally:
        receiver.stop()


def _figure(at: float | None, changed_at: float) -> float:
    return at - changed_at if at is not None else math.nan


def detection_results(timing: Timing, detections: list[Detection]) -> list[Result]:
    rows = []
    for d in detections:
        name = f"{timing.interval_s:g} s interval: {d.scenario.name} → {d.status}"
        bar, bar_text = timing.bar(d.scenario, d.status)
        lake_note = f"not detected within {timing.lake_give_up_s:.0f} s (then: {d.newest or 'no row'})"
        if d.lake_updated_at is not None:
            lake_note = f"row measured at +{d.lake_updated_at - d.changed_at:.1f} s (updated_at)"
        if d.scenario.killed and d.status == "STOP":
            lake_note += f"; the killed member stays until session.timeout.ms ({SESSION_TIMEOUT_S:.0f} s)"
        if d.status_at_change != "OK":
            lake_note += f"; the group was {d.status_at_change} at the change"
        if bar is not None:
            lake_note += f"; {bar_text}"
        hook_note = timing.alert_text
        if d.webhook_at is None:
            hook_note = f"not delivered within {timing.webhook_give_up_s:.0f} s; {hook_note}"
        rows.append(Result(f"{name} in the lake", _figure(d.lake_seen_at, d.changed_at), "s", bar, "max", lake_note))
        rows.append(Result(f"{name} at the webhook", _figure(d.webhook_at, d.changed_at), "s", None, note=hook_note))
    return rows


def false_alarm_result(timing: Timing, healthy_rows: dict[float, str]) -> Result:
    """Rows of the healthy group (one per status update seen) that were not OK: false alarms."""
    not_ok = [status for status in healthy_rows.values() if status != "OK"]
    kinds = f" ({', '.join(sorted(set(not_ok)))})" if not_ok else ""
    note = f"of {len(healthy_rows)} group_status updates seen from the end of start-up on{kinds}"
    return Result(f"{timing.interval_s:g} s interval: healthy group, status rows not OK", len(not_ok), "rows", None,
                  note=note)  # fmt: skip


def commit_log_result(timing: Timing, in_use: float) -> Result:
    """The leave bar rests on the collector reading the commit log: judged, so a fallback to OffsetFetch shows."""
    note = "the collector's newest commit_log_in_use at the change (collect.commit_log as shipped)"
    return Result(f"{timing.interval_s:g} s interval: collector reads the commit log", in_use, "", 1, note=note)


def run(intervals: tuple[float | None, ...] = INTERVALS_S, scenarios: tuple[Scenario, ...] = SCENARIOS) -> list[Result]:
    results: list[Result] = []
    for interval_s in intervals:
        timing, detections, healthy_rows, log_in_use = run_interval(interval_s, scenarios)
        results.append(commit_log_result(timing, log_in_use))
        if any(s.name == "healthy" for s in scenarios):
            results.append(false_alarm_result(timing, healthy_rows))
        results.extend(detection_results(timing, detections))
    return results


def main(argv: list[str]) -> int:
    """`python -m bench.bench_detection [--interval S]... [--only NAME]...`: a part of the run, e.g. a quick check."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_detection")
    parser.add_argument("--interval", type=float, action="append", help="collector interval (s); default: "
                        "the shipped one, then 5")  # fmt: skip
    parser.add_argument("--only", action="append", choices=[s.name for s in SCENARIOS], help="scenario to run")
    args = parser.parse_args(argv)
    scenarios = tuple(s for s in SCENARIOS if not args.only or s.name in args.only)
    for row in run(tuple(args.interval or INTERVALS_S), scenarios):
        print(f"{row.name}: {row.figure:,.2f} {row.unit} ({row.verdict}) {row.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
