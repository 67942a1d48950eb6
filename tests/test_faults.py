"""Fault suite: real processes meet a hung broker, a malformed burst and a long receiver outage.

Each test counts what went in against what came out. The other faults of the suite live
beside the part they hurt: kill -9 of the Spark job (tests/spark_jobs/test_job.py), of a
collector (tests/collectors/test_scale_out.py), of the alert engine
(tests/alerts/test_delivery.py), and a JMX target that accepts and never answers
(tests/collectors/jmx/test_collector.py).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alerts.receivers import INCIDENT_HEADER, SEQUENCE_HEADER
from harness import lake_rows
from harness.config_file import write_config
from harness.exporter import Exporter
from harness.polling import wait_until
from harness.processes import start_lagwatch
from harness.real_kafka import RealKafkaBroker
from harness.samples_topic import read_messages, read_samples
from harness.webhook_receiver import WebhookReceiver
from lagwatch.kafka import ensure_topic
from lagwatch.lake import connect_readonly
from tests.alerts.support import outbox_rows
from tests.spark_jobs.samples_io import produce_values

PAUSE_S = 60
RECEIVER_DOWN_S = 120
WINDOW_KEY = ("source", "metric", "broker", "topic", "partition", "group_id", "client_id")

pytestmark = pytest.mark.slow


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[RealKafkaBroker]:
    """A real broker of this test alone: it is paused, which the session broker's other users must not see."""
    with RealKafkaBroker(work_dir=tmp_path / "kafka") as broker:
        yield broker


def _pipeline_config(tmp_path: Path, broker: RealKafkaBroker, exporter: Exporter) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""
[cluster]
name = "faults"
bootstrap_servers = "{broker.bootstrap_servers}"
[transport]
samples_topic = "samples"
samples_partitions = 3
[collect]
interval_s = 1
timeout_s = 1
coordinate = false
[[jmx.targets]]
broker = "1"
backend = "prometheus"
url = "{exporter.url()}"
[lake]
path = "{tmp_path / "lake"}"
duckdb_path = "{tmp_path / "lagwatch.duckdb"}"
[spark]
trigger_s = 1
checkpoint_dir = "{tmp_path / "checkpoints"}"
kafka_timeout_s = 5
kafka_retries = 1
kafka_read_timeout_s = 15
"""
    )
    return path


def _stop(process: subprocess.Popen[bytes], log: Path) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(90) == 0, log.read_text()[-3000:]


def _lake(tmp_path: Path, sql: str) -> list[tuple[Any, ...]]:
    """A read-only query over the lake (connect_readonly creates the views file if the job has not yet)."""
    con = connect_readonly(tmp_path / "lake", tmp_path / "lagwatch.duckdb")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _expected_windows(samples: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """metrics_10s sample counts recomputed from the topic: one per distinct sample id."""
    unique = {s["id"]: s for s in samples}
    return Counter((*(s[k] for k in WINDOW_KEY), s["ts"] - s["ts"] % 10_000) for s in unique.values())


def _lake_windows(tmp_path: Path) -> Counter[tuple[Any, ...]]:
    rows = _lake(tmp_path, f"select {', '.join(WINDOW_KEY)}, epoch_ms(window_start), samples from metrics_10s")
    return Counter({tuple(row[:-1]): row[-1] for row in rows})


def _delivery_counts(log: Path) -> tuple[int, int, int]:
    found = re.findall(r"publisher closed: produced (\d+), delivered (\d+), failed (\d+)", log.read_text())
    assert found, f"no publisher summary in {log}"
    produced, delivered, failed = (int(n) for n in found[-1])
    return produced, delivered, failed


def test_broker_paused_60_s_then_resumed_loses_no_sample(
    own_broker: RealKafkaBroker, exporter: Exporter, tmp_path: Path
) -> None:
    """SIGSTOP the only broker (transport and monitored cluster) for 60 s under a running pipeline.

    The collector keeps scraping the exporter into its bounded buffer, the Spark job's source
    fails its batch (a metadata call after 2 × 5 s, or a read in flight after
    `kafka_read_timeout_s` = 15 s, both shorter than the pause) and the job restarts the query from
    its checkpoint with backoff. After
    SIGCONT every sample the collector produced is in the topic exactly once, and the lake's
    windows equal a recomputation from the topic, including the minute the broker was hung.
    """
    config = _pipeline_config(tmp_path, own_broker, exporter)
    collect_log, stream_log = tmp_path / "collect.log", tmp_path / "stream.log"
    collector = start_lagwatch(config, collect_log, "collect")
    stream = start_lagwatch(config, stream_log, "stream")
    try:
        wait_until(lambda: sum(_lake_windows(tmp_path).values()) > 0, 180, "the first windows in the lake")
        paused_at = time.time()
        own_broker.pause()
        time.sleep(PAUSE_S)
        own_broker.resume()
        resumed_at = time.time()
        time.sleep(15)  # the pipeline runs on after the outage
        assert collector.poll() is None and stream.poll() is None, "both processes survived the outage"
        _stop(collector, collect_log)

        produced, delivered, failed = _delivery_counts(collect_log)
        samples = read_samples(own_broker.bootstrap_servers, "samples", expect_at_least=produced)
        assert (delivered, failed) == (produced, 0)
        assert len(samples) == len({s["id"] for s in samples}) == produced, "each produced sample once in the topic"

        expected = _expected_windows(samples)
        hung = [
            s for s in samples if s["source"] == "prom" and paused_at * 1000 + 2000 < s["ts"] < resumed_at * 1000 - 2000
        ]
        assert len(hung) >= PAUSE_S // 2, "the exporter was scraped and buffered while the broker hung"
        wait_until(lambda: _lake_windows(tmp_path) == expected, 180, "the lake to hold every sample of the topic")
        assert stream.poll() is None
    finally:
        for process in (collector, stream):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
    assert stream.wait(90) == 0, stream_log.read_text()[-3000:]
    log_text = stream_log.read_text()
    assert "Kafka unreachable" in log_text and "restarting from its checkpoint" in log_text, log_text[-3000:]
    assert "Traceback" not in collect_log.read_text()


def test_malformed_burst_into_a_running_stream_goes_to_dead_letters(
    own_broker: RealKafkaBroker, exporter: Exporter, tmp_path: Path
) -> None:
    """1,000 malformed records of six kinds land in the topic while the job runs on live samples."""
    config = _pipeline_config(tmp_path, own_broker, exporter)
    ensure_topic({"bootstrap.servers": own_broker.bootstrap_servers}, "samples", 3)
    collect_log, stream_log = tmp_path / "collect.log", tmp_path / "stream.log"
    collector = start_lagwatch(config, collect_log, "collect")
    stream = start_lagwatch(config, stream_log, "stream")
    template = {"v": 1, "id": "x", "ts": int(time.time() * 1000), "cluster": "faults", "source": "jmx",
                "collector": "c", "metric": "m", "kind": "gauge", "value": 1.0}  # fmt: skip
    kinds = [
        b"{not json",
        None,
        json.dumps({**template, "v": 7}).encode(),
        json.dumps({**template, "value": "high"}).encode(),
        json.dumps({k: v for k, v in template.items() if k != "metric"}).encode(),
        b"x" * 70_000,
    ]
    try:
        time.sleep(5)
        burst = [(b"bad", kinds[i % len(kinds)]) for i in range(1000)]
        produce_values(own_broker.bootstrap_servers, "samples", burst, partition=1)
        time.sleep(5)
        _stop(collector, collect_log)
        produced, _, _ = _delivery_counts(collect_log)
        records = read_messages(own_broker.bootstrap_servers, "samples", expect_at_least=produced + 1000)
        valid = [json.loads(r.value()) for r in records if r.key() != b"bad"]
        assert len(records) == produced + 1000 and len(valid) == produced

        dead_letters = lambda: _lake(tmp_path, "select count(*) from dead_letters")[0][0]  # noqa: E731
        wait_until(lambda: dead_letters() == 1000, 240, "1,000 dead letters")
        wait_until(lambda: _lake_windows(tmp_path) == _expected_windows(valid), 120, "every valid sample")
    finally:
        for process in (collector, stream):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
    assert stream.wait(90) == 0
    reasons = dict(_lake(tmp_path, "select regexp_extract(error, '^[a-z ]+'), count(*) from dead_letters group by 1"))
    assert sum(reasons.values()) == 1000 and len(reasons) == len(kinds), reasons


def test_webhook_receiver_down_2_minutes_then_every_notification_once(
    tmp_path: Path, webhook_receiver: WebhookReceiver
) -> None:
    """The engine keeps firing into a dead receiver for 2 minutes; afterwards each notification arrives once."""
    lake, state = tmp_path / "lake", tmp_path / "state"
    config = write_config(
        tmp_path / "alerts.toml",
        {
            "cluster": {"name": "test"},
            "lake": {"path": str(lake), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
            "alerts": {"state_dir": str(state), "use_default_rules": False, "leadership": "none",
                       "evaluate_every_s": 1, "group_wait": "0s", "group_interval": "1s",
                       "group_by": ["alertname", "group_id"], "retry_initial_s": 1, "retry_max_s": 10},
        },
        rules=[{"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}],
        receivers=[{"name": "ops", "type": "webhook", "url": webhook_receiver.url}],
    )  # fmt: skip
    log = tmp_path / "engine.log"
    webhook_receiver.stop()
    down_at = time.monotonic()
    for group in ("g1", "g2", "g3"):
        lake_rows.group_status(lake, time.time(), group, total_lag=500)
    engine = start_lagwatch(config, log, "alerts")
    try:
        wait_until(lambda: len(outbox_rows(state)) == 3, 60, "three firing notifications in the outbox")
        time.sleep(RECEIVER_DOWN_S / 2)
        lake_rows.group_status(lake, time.time(), "g1", total_lag=0)  # g1 resolves during the outage
        wait_until(lambda: len(outbox_rows(state)) == 4, 60, "the resolved notification in the outbox")
        time.sleep(max(0.0, RECEIVER_DOWN_S - (time.monotonic() - down_at)))
        assert all(status != "delivered" for _, _, status, _ in outbox_rows(state))
        webhook_receiver.start()
        wait_until(lambda: all(r[2] == "delivered" for r in outbox_rows(state)), 60, "the outbox to drain")
    finally:
        _stop(engine, log)
    pairs = [(r.headers[INCIDENT_HEADER], int(r.headers[SEQUENCE_HEADER])) for r in webhook_receiver.received()]
    assert len(pairs) == len(set(pairs)) == 4, "every notification arrived, once"
    by_incident: dict[str, list[int]] = {}
    for key, seq in pairs:
        by_incident.setdefault(key, []).append(seq)
    assert sorted(by_incident.values()) == [[1], [1], [1, 2]], "in order per incident"
    events = dict(_lake(tmp_path, "select event, count(*) from alert_events group by event"))
    assert events["delivered"] == 4 and events["failed"] >= 4, events
