"""Two engines for one cluster on a real broker: one sends; kill it, the other takes over; an engine
started during a Kafka outage joins the election when Kafka is back."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from alerts.receivers import SENDER_HEADER
from harness import lake_rows
from harness.config_file import write_config
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from tests.alerts.support import start_engine

RULE = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}


def _config(tmp_path: Path, name: str, bootstrap: str, leader_topic: str, webhook_url: str, **alerts: object) -> Path:
    return write_config(
        tmp_path / f"{name}.toml",
        {
            "cluster": {"name": "test", "bootstrap_servers": bootstrap},
            "lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / f"{name}.duckdb")},
            "alerts": {
                "state_dir": str(tmp_path / name),
                "use_default_rules": False,
                "leadership": "kafka_strict",
                "leader_topic": leader_topic,
                # tansu: a group join takes about half of session.timeout.ms, so keep it at 6000 in tests.
                "leader_session_timeout_ms": 6000,
                "evaluate_every_s": 0.5,
                "group_wait": "0s",
                "group_interval": "1s",
                "repeat_interval": "2s",
                **alerts,
            },
        },
        rules=[RULE],
        receivers=[{"name": "ops", "type": "webhook", "url": webhook_url}],
    )


@pytest.mark.slow
def test_one_engine_sends_and_the_other_takes_over(tmp_path: Path, broker, webhook_receiver, unique) -> None:
    topic = unique("lagwatch.alerts.leader")
    lake_rows.group_status(tmp_path / "lake", time.time(), "g1", total_lag=500)  # current for 10 min (lookback)
    engines = {
        name: start_engine(
            _config(tmp_path, name, broker.bootstrap_servers, topic, webhook_receiver.url), tmp_path / f"{name}.log"
        )
        for name in ("a", "b")
    }
    try:
        wait_until(lambda: len(webhook_receiver.received()) >= 3, 90, "the leader's first notifications (with repeats)")
        senders = {r.headers[SENDER_HEADER] for r in webhook_receiver.received()}
        assert len(senders) == 1, f"exactly one engine sends, got {senders}"
        [leader_sender] = senders
        leader = next(name for name, p in engines.items() if leader_sender.endswith(f"-{p.pid}"))
        follower = "b" if leader == "a" else "a"

        os.kill(engines[leader].pid, signal.SIGKILL)
        engines[leader].wait()
        follower_sender = leader_sender.rsplit("-", 1)[0] + f"-{engines[follower].pid}"
        wait_until(lambda: any(r.headers[SENDER_HEADER] == follower_sender for r in webhook_receiver.received()),
                   90, "the follower taking over")  # fmt: skip
        assert "is now the leader" in (tmp_path / f"{follower}.log").read_text()
    finally:
        for process in engines.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(30)


def _group_settled(bootstrap: str, group: str, members: int) -> bool:
    """The leader group is Stable with `members` members, one of them holding partition 0."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [description] = [f.result(10) for f in admin.describe_consumer_groups([group]).values()]
    holders = [m for m in description.members if any(p.partition == 0 for p in m.assignment.topic_partitions)]
    return description.state.name == "STABLE" and len(description.members) == members and len(holders) == 1


def _log_has(path: Path, text: str) -> bool:
    return path.exists() and text in path.read_text()


@pytest.mark.slow
def test_engine_started_during_an_outage_joins_the_election(tmp_path: Path, webhook_receiver, unique) -> None:
    """Engine a leads; Kafka hangs; b starts and sends alone; Kafka is back: b must join the election,
    so an alert raised afterwards is sent once (and resolved once) by one engine only."""
    topic = unique("lagwatch.alerts.leader")
    lake = tmp_path / "lake"
    lake_rows.group_status(lake, time.time(), "g1", total_lag=0)  # healthy: nothing to send yet
    logs = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    engines: dict[str, subprocess.Popen[bytes]] = {}
    with RealKafkaBroker(tmp_path / "kafka") as own_broker:
        bootstrap = own_broker.bootstrap_servers

        def config(name: str) -> Path:
            return _config(tmp_path, name, bootstrap, topic, webhook_receiver.url, leadership="kafka",
                           repeat_interval="1h")  # fmt: skip

        try:
            engines["a"] = start_engine(config("a"), logs["a"])
            wait_until(lambda: _log_has(logs["a"], "is now the leader"), 90, "engine a leading")
            own_broker.pause()
            try:
                engines["b"] = start_engine(config("b"), logs["b"])
                wait_until(lambda: _log_has(logs["b"], "sending alone until Kafka answers"), 90, "b sending alone")
            finally:
                own_broker.resume()
            wait_until(lambda: _log_has(logs["b"], "joins the leader election"), 90, "b joining the election")
            wait_until(lambda: _group_settled(bootstrap, topic, members=2), 90, "the leader group settling")

            t0 = time.time()
            lake_rows.group_status(lake, t0, "g1", total_lag=500)
            wait_until(lambda: webhook_receiver.received(), 60, "the firing notification")
            lake_rows.group_status(lake, t0 + 1, "g1", total_lag=0)
            wait_until(lambda: any(r.json()["status"] == "resolved" for r in webhook_receiver.received()), 60,
                       "the resolved notification")  # fmt: skip
        finally:
            for process in engines.values():
                process.send_signal(signal.SIGTERM)
            for process in engines.values():
                process.wait(30)
    received = webhook_receiver.received()
    assert [r.json()["status"] for r in received] == ["firing", "resolved"], "every notification exactly once"
    assert len({r.headers[SENDER_HEADER] for r in received}) == 1, "one sender"
