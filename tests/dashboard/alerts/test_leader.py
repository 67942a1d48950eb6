"""Two engines for one cluster on a real tansu broker: one sends; kill it; the other takes over."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from dashboard.alerts.receivers import SENDER_HEADER
from tests.dashboard.alerts import lake_rows
from tests.dashboard.alerts.support import start_engine, wait_until, write_config

RULE = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}


def _config(tmp_path: Path, name: str, bootstrap: str, leader_topic: str, webhook_url: str) -> Path:
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
