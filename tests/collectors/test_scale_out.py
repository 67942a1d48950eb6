"""Several `lagwatch collect` instances share the targets; a killed one's targets move on.

Real processes, a real broker, real exporter endpoints: four Prometheus-exporter targets served
by a local HTTP server plus the admin target, two collector instances in one coordination
group. We read the `up` samples each instance publishes to learn who scraped what.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from harness.exporter import Exporter
from shell.broker import EmbeddedBroker

SESSION_TIMEOUT_MS = 6000  # tansu: a group join takes about half of session.timeout.ms
# How far back "who scrapes this target now" looks: the admin target's cycle on a broker that
# already holds the whole suite's groups can take seconds, and its `up` sample comes at its end.
RECENT_MS = 10_000
#: The reader takes messages in batches and parses only those that may be `up` samples, so it keeps
#: up with the topic on a loaded host (it judged a takeover late when it fell behind).
UP_BATCH = 1000
UP_MARK = b'"up"'


class UpSamples:
    """Collects every `up` sample of a topic in the background: (ts, target labels, collector)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.rows: list[tuple[int, str, str]] = []
        self._stop = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}"})
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        assigned = False
        while not self._stop.is_set():
            if not assigned:
                meta = self._consumer.list_topics(self._topic, timeout=5).topics.get(self._topic)
                if meta is None or not meta.partitions:
                    time.sleep(0.2)
                    continue
                self._consumer.assign([TopicPartition(self._topic, p, 0) for p in meta.partitions])
                assigned = True
            for message in self._consumer.consume(UP_BATCH, 0.2):
                value = message.value() if not message.error() else None
                if not value or UP_MARK not in value:  # skip parsing what cannot be an `up` sample
                    continue
                sample = json.loads(value)
                if sample["metric"] == "up":
                    target = sample["broker"] or f"admin:{sample['source']}"
                    self.rows.append((sample["ts"], target, sample["collector"]))

    def scrapers_since(self, since_ms: int) -> dict[str, set[str]]:
        result: dict[str, set[str]] = {}
        for ts, target, collector in list(self.rows):
            if ts >= since_ms:
                result.setdefault(target, set()).add(collector)
        return result

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()


def _write_config(tmp_path: Path, broker: EmbeddedBroker, exporter: Exporter, suffix: str) -> Path:
    targets = "".join(
        f'[[jmx.targets]]\nbroker = "{b}"\nbackend = "prometheus"\nurl = "{exporter.url("/m" + str(b))}"\n'
        for b in range(1, 5)
    )
    path = tmp_path / "collect.toml"
    path.write_text(
        f'[cluster]\nname = "scale"\nbootstrap_servers = "{broker.bootstrap_servers}"\n'
        f'[transport]\nsamples_topic = "samples-{suffix}"\n[transport.producer]\n"batch.num.messages" = 1\n'
        f"[collect]\ninterval_s = 1\ntimeout_s = 1\nsession_timeout_ms = {SESSION_TIMEOUT_MS}\n"
        # The admin target reads no group or topic of the suite's broker: this is about who scrapes.
        f'groups_allow = ["^scale-{suffix}-"]\ntopics_allow = ["^scale-{suffix}-"]\n'
        f'coordination_group = "collectors-{suffix}"\ncoordination_topic = "targets-{suffix}"\n' + targets
    )
    return path


def _start_collector(config: Path, name: str, logs: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = open(logs / f"{name}.log", "wb")  # noqa: SIM115 - closed by the child's exit
    config_text = config.read_text().replace("[collect]\n", f'[collect]\ninstance_id = "{name}"\n')
    own = logs / f"{name}.toml"
    own.write_text(config_text)
    return subprocess.Popen(
        [sys.executable, "-m", "shell.cli", "--config", str(own), "collect"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )


def _wait_for(condition, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


@pytest.mark.slow
def test_two_instances_share_targets_and_survive_kill_9(
    broker: EmbeddedBroker, exporter: Exporter, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    config = _write_config(tmp_path, broker, exporter, suffix)
    first = _start_collector(config, "collector-a", tmp_path)
    second = _start_collector(config, "collector-b", tmp_path)
    ups = UpSamples(broker.bootstrap_servers, f"samples-{suffix}")
    all_targets = {"1", "2", "3", "4", "admin:admin"}
    try:
        # Settled: every target scraped, each by exactly one instance, both instances busy.
        def settled() -> bool:
            recent = ups.scrapers_since(int(time.time() * 1000) - RECENT_MS)
            return (
                set(recent) == all_targets
                and all(len(s) == 1 for s in recent.values())
                and set().union(*recent.values()) == {"collector-a", "collector-b"}
            )

        assert _wait_for(settled, 90), f"never settled: {ups.scrapers_since(int(time.time() * 1000) - RECENT_MS)}"

        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = int(time.time() * 1000)

        def taken_over() -> bool:
            # Nothing stamped after the kill can come from the killed instance.
            since_kill = ups.scrapers_since(killed_at)
            return set(since_kill) == all_targets and all(s == {"collector-b"} for s in since_kill.values())

        assert _wait_for(taken_over, 4 * SESSION_TIMEOUT_MS / 1000), f"not taken over: {ups.scrapers_since(killed_at)}"
        # No target was left unscraped for longer than the session timeout plus a join.
        for target in all_targets:
            stamps = sorted(ts for ts, t, _ in ups.rows if t == target and ts >= killed_at - 2000)
            gaps = [b - a for a, b in itertools.pairwise(stamps)]
            assert stamps and max(gaps, default=0) <= 3 * SESSION_TIMEOUT_MS, (target, gaps)
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)
        ups.close()
    assert second.returncode == 0
