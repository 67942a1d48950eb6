"""The whole stack as `make run` starts it: `lagwatch up` with the demo workload.

It runs twice: on the embedded tansu (what `make run` uses: `up` runs the demo and scrapes its
simulated JMX) and on a real Apache Kafka broker configured as the cluster, with the samples
topic on it too (batched publisher) and the broker's own JMX scraped by the jpype backend.
There `up` runs no demo and no simulated JMX, since a configured cluster is only watched: the
test drives the demo's groups itself, as the applications on that cluster, and checks that
`up` added nothing to the broker but Lagwatch's own `lagwatch.*` topics and consumer groups.

Within a bounded time the slow group must be WARN with time lag rising and the stopped group
STOP, each with its reason; an alert for the slow group must reach a real webhook receiver;
the dashboard (real chromium) must show those statuses, and its numbers must match a DuckDB
query over the lake and the offsets the demo committed on the broker. Ctrl-C must stop every
process. The lag window is shortened (40 s); STOP comes after the shipped stop_after_s (30 s).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from harness.broker_names import OWN_PREFIXES, BrokerNames, added_since, broker_names
from harness.local_stack import stack_logs
from harness.real_kafka import RealKafkaBroker
from harness.webhook_receiver import WebhookReceiver
from lagwatch.config import parse_config
from lagwatch.lake import connect_readonly
from shell.broker import free_port
from shell.demo import DEMO_PREFIX, GROUPS, DemoWorkload

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
UP_TIMEOUT_S = 300
STATUS_TIMEOUT_S = 300
_BY_BEHAVIOUR = {group.behaviour: group for group in GROUPS}
SLOW, STOPPED = _BY_BEHAVIOUR["slow"].group_id, _BY_BEHAVIOUR["stopped"].group_id
STOPPED_TOPIC = _BY_BEHAVIOUR["stopped"].topic
COORDINATION_GROUP = "e2e-collectors"
DEMO_RATE = 30


def _real_broker_sections(kafka: RealKafkaBroker) -> str:
    """A configured cluster: the real broker, and its JMX (no simulated exporter beside it)."""
    return f"""
bootstrap_servers = "{kafka.bootstrap_servers}"
[[jmx.targets]]
broker = "1"
host = "127.0.0.1"
port = {kafka.jmx_port}
backend = "jpype"
"""


def _config(tmp_path: Path, receiver: WebhookReceiver, kafka: RealKafkaBroker | None) -> tuple[Path, int]:
    dashboard_port, sim_port, api_port = free_port(), free_port(), free_port()
    cluster = _real_broker_sections(kafka) if kafka else ""
    text = f"""
[cluster]
name = "e2e"
{cluster}
[collect]
interval_s = 2
timeout_s = 2
coordination_group = "{COORDINATION_GROUP}"
[lake]
path = "lake"
duckdb_path = "lagwatch.duckdb"
[spark]
trigger_s = 2
checkpoint_dir = "state/checkpoints"
watermark_s = 10
[lag]
window_s = 40
[dashboard]
port = {dashboard_port}
[api]
port = {api_port}
[demo]
rate = {DEMO_RATE}
jmx_sim_port = {sim_port}
[alerts]
evaluate_every_s = 2
group_wait = "1s"
group_interval = "5s"
use_default_rules = false
state_dir = "state/alerts"
[[alerts.receivers]]
name = "test"
type = "webhook"
url = "{receiver.url}"
[[alerts.rules]]
name = "ConsumerGroupLagging"
kind = "status"
metric = "status"
level = "WARN"
by = ["group_id"]
severity = "warning"
receivers = ["test"]
summary = "group {{group_id}} is lagging"
"""
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path, dashboard_port


def _latest_status(tmp_path: Path) -> dict[str, tuple[str, str, int, float | None]]:
    con = connect_readonly(tmp_path / "lake", tmp_path / "lagwatch.duckdb")
    try:
        rows = con.execute(
            "SELECT group_id, status, reason, total_lag, max_time_lag_s FROM group_status "
            "QUALIFY row_number() OVER (PARTITION BY group_id ORDER BY updated_at DESC) = 1"
        ).fetchall()
    finally:
        con.close()
    return {g: (s, r, int(lag or 0), t) for g, s, r, lag, t in rows}


def _time_lag_history(tmp_path: Path, group: str) -> list[float]:
    con = connect_readonly(tmp_path / "lake", tmp_path / "lagwatch.duckdb")
    try:
        rows = con.execute(
            "SELECT window_start, max(time_lag_s) FROM lag_1m WHERE group_id = ? AND time_lag_s IS NOT NULL "
            "GROUP BY window_start ORDER BY window_start",
            [group],
        ).fetchall()
    finally:
        con.close()
    return [float(t) for _, t in rows]


def _lake_committed_total(tmp_path: Path, group: str) -> int:
    con = connect_readonly(tmp_path / "lake", tmp_path / "lagwatch.duckdb")
    try:
        (total,) = con.execute(
            "SELECT sum(committed_offset) FROM lag_1m WHERE group_id = ? "
            "AND window_start = (SELECT max(window_start) FROM lag_1m WHERE group_id = ?)",
            [group, group],
        ).fetchone()
    finally:
        con.close()
    return int(total or 0)


def _committed_total(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        offsets = consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        return sum(max(0, tp.offset) for tp in offsets)
    finally:
        consumer.close()


def _wait_for_line(process: subprocess.Popen[bytes], log: Path, pattern: str, timeout_s: float) -> re.Match[str]:
    """The first line of `up`'s output (a file, so a stack that logs much never blocks on a full
    pipe) matching `pattern`; fails with the stack's logs when it exits or the time is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        match = re.search(pattern, log.read_text(errors="replace"), re.MULTILINE)
        if match:
            return match
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r}:\n{stack_logs(log.parent, log)}")


def _real_jmx_rate(tmp_path: Path) -> float:
    """Highest per-second rate of records in that the lake holds for the real broker (id 1)."""
    con = connect_readonly(tmp_path / "lake", tmp_path / "lagwatch.duckdb")
    try:
        (rate,) = con.execute(
            "SELECT max(rate_per_s) FROM metrics_1m WHERE broker = '1' AND metric = 'messages_in_total' "
            "AND topic IS NULL"
        ).fetchone()
    finally:
        con.close()
    return float(rate or 0)


class WatchedApplications:
    """The demo's groups, driven by the test on its real broker: the applications a configured
    cluster runs, which `lagwatch up` only watches (it runs no demo there). One tick a second on a
    thread; the topics and the groups exist once entered."""

    def __init__(self, bootstrap: str) -> None:
        config = parse_config({"cluster": {"bootstrap_servers": bootstrap}, "demo": {"rate": DEMO_RATE}}, environ={})
        self.workload = DemoWorkload(config)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watched-applications", daemon=True)

    def __enter__(self) -> WatchedApplications:
        self.workload.setup()
        self.workload.tick()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.workload.tick()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(10)
        self.workload.close()


def _assert_up_added_only_its_own(bootstrap: str, before: BrokerNames, log: Path) -> None:
    """On a configured cluster `up` ran no demo: after many collector cycles the broker holds only
    what was there before plus Lagwatch's own `lagwatch.*` topics (and Kafka's internal ones) and
    Lagwatch's own consumer groups."""
    added = added_since(before, bootstrap)
    new_topics, new_groups = added.topics, added.groups
    assert "lagwatch.samples" in new_topics, new_topics
    assert all(t.startswith(("lagwatch.", "__")) for t in new_topics), new_topics
    own = {g for g in new_groups if g == COORDINATION_GROUP or g.startswith(OWN_PREFIXES)}
    assert new_groups == own and not any(g.startswith(DEMO_PREFIX) for g in new_groups), new_groups
    text = log.read_text()
    assert "no demo: cluster e2e is a configured cluster" in text and "demo ready" not in text, text[-3000:]
    print(f"\nadded by `up` on the configured cluster: topics {sorted(new_topics)}, groups {sorted(new_groups)}")


@pytest.fixture(params=["tansu", "kafka"])
def stack_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RealKafkaBroker | None]:
    """None: `lagwatch up` starts its embedded tansu; else a real broker of this test's own."""
    if request.param == "tansu":
        yield None
        return
    with RealKafkaBroker(work_dir=tmp_path / "kafka") as kafka:
        yield kafka


@pytest.fixture
def watched(stack_broker: RealKafkaBroker | None) -> Iterator[BrokerNames | None]:
    """On the real broker: its own applications running (`WatchedApplications`), and its topics
    and groups before `up` starts; None on tansu, where `up` runs the demo itself."""
    if stack_broker is None:
        yield None
        return
    with WatchedApplications(stack_broker.bootstrap_servers):
        yield broker_names(stack_broker.bootstrap_servers)


@pytest.mark.slow
def test_make_run_stack_judges_groups_alerts_and_shows_it(
    tmp_path: Path,
    webhook_receiver: WebhookReceiver,
    artifacts_dir: Path,
    stack_broker: RealKafkaBroker | None,
    watched: BrokerNames | None,
) -> None:
    config, dashboard_port = _config(tmp_path, webhook_receiver, stack_broker)
    started = time.monotonic()
    log = tmp_path / "up.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "shell.cli", "--config", str(config), "up"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        bootstrap = _wait_for_line(process, log, r"^broker (\S+:\d+) ready", 60).group(1)
        _wait_for_line(process, log, r"Lagwatch is up", UP_TIMEOUT_S)
        up_s = time.monotonic() - started

        deadline = time.monotonic() + STATUS_TIMEOUT_S
        status: dict[str, tuple[str, str, int, float | None]] = {}
        history: list[float] = []
        while time.monotonic() < deadline and process.poll() is None:
            status = _latest_status(tmp_path)
            judged = status.get(SLOW, ("",))[0] == "WARN" and status.get(STOPPED, ("",))[0] == "STOP"
            # Time lag is `unknown` in a partition's first minute (too little end-offset history),
            # so "rising" needs a second minute: the stack can judge WARN and STOP before that.
            history = _time_lag_history(tmp_path, SLOW) if judged else []
            if len(history) >= 2:
                break
            time.sleep(3)
        judged_s = time.monotonic() - started
        if status.get(SLOW, ("",))[0] != "WARN":
            kept = artifacts_dir / f"e2e-{'kafka' if stack_broker else 'tansu'}-logs.txt"
            kept.write_text(stack_logs(tmp_path, log, 20_000))
        assert status.get(SLOW, ("",))[0] == "WARN", f"{status}\n{stack_logs(tmp_path, log)}"
        assert status[SLOW][1].startswith("WARN"), status[SLOW]
        assert status.get(STOPPED, ("",))[0] == "STOP", status
        # Assigned partitions and no commit log (tansu) or an always-empty group (real Kafka): by time.
        stop_reason = r"STOP: (no commit|committed offset unchanged) for \S+ .*> stop_after_s 30s .*"
        assert re.match(stop_reason + r"(no membership reading|no member owns it)", status[STOPPED][1]), status[STOPPED]
        assert len(history) >= 2 and history[-1] > history[0], history  # time lag rising

        # An alert for the slow group reached the real receiver.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(SLOW in r.body.decode() for r in webhook_receiver.received()):
            time.sleep(1)
        payloads = [r.json() for r in webhook_receiver.received()]
        slow_alerts = [a for p in payloads for a in p["alerts"] if a["labels"].get("group_id") == SLOW]
        assert slow_alerts and slow_alerts[0]["status"] == "firing", payloads
        alerted_s = time.monotonic() - started

        # The lake agrees with the broker: the stopped group's committed offsets no longer move, so
        # the newest lag_1m window must hold exactly what the demo committed.
        broker_committed = _committed_total(bootstrap, STOPPED, STOPPED_TOPIC)
        assert broker_committed > 0
        assert _lake_committed_total(tmp_path, STOPPED) == broker_committed

        if stack_broker is not None and watched is not None:  # the real broker's own MBeans reached the lake
            assert _real_jmx_rate(tmp_path) > 0
            _assert_up_added_only_its_own(stack_broker.bootstrap_servers, watched, log)

        _check_dashboard(dashboard_port, tmp_path, artifacts_dir)
        timings = f"up {up_s:.0f} s, WARN+STOP and rising time lag {judged_s:.0f} s, alert {alerted_s:.0f} s"
        print(f"\ne2e timings: {timings}")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(120)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, stack_logs(tmp_path, log)
    state = tmp_path / "state" / "stack.json"
    assert not state.exists()
    leftovers = subprocess.run(["pgrep", "-f", str(config)], capture_output=True, text=True).stdout.split()
    assert leftovers == [], f"processes left behind: {leftovers}"


def _wait_or_keep_page(locator: Any, page: Any, keep: Path) -> None:
    """Wait for ``locator``; if it never shows, keep a screenshot and the page's text (what it
    showed instead, an exception or a spinner) beside the other artifacts, then fail."""
    try:
        locator.wait_for(timeout=60_000)
    except Exception:
        page.screenshot(path=str(keep.with_suffix(".png")), full_page=True)
        keep.with_suffix(".txt").write_text(page.inner_text("body"))
        raise


def _check_dashboard(port: int, tmp_path: Path, artifacts_dir: Path) -> None:
    """The groups page shows each group's status and reason as the lake has them."""
    from playwright.sync_api import sync_playwright

    status = _latest_status(tmp_path)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for group in (SLOW, STOPPED):
                page.goto(f"http://127.0.0.1:{port}/groups?group={group}&range=1h")
                failed = artifacts_dir / f"e2e-groups-{group}-failed"
                tile = page.get_by_test_id("stMetric").filter(has_text="Status").first
                _wait_or_keep_page(tile, page, failed)
                shown = tile.get_by_test_id("stMetricValue").inner_text().strip()
                assert shown == status[group][0], (group, shown, status[group])
                _wait_or_keep_page(page.get_by_text("Reason: ").first, page, failed)
                assert page.get_by_test_id("stException").count() == 0
                page.screenshot(path=str(artifacts_dir / f"e2e-groups-{group}.png"), full_page=True)
        finally:
            browser.close()
    (artifacts_dir / "e2e-status.json").write_text(json.dumps(status, indent=1, default=str))
