"""Delivery without loss: receiver outages and a kill -9 of the engine, counted by key and sequence."""

from __future__ import annotations

import os
import signal
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from alerts.receivers import INCIDENT_HEADER, SEQUENCE_HEADER, SIGNATURE_HEADER, signature
from harness import lake_rows
from harness.config_file import write_config
from harness.polling import wait_until
from lagwatch.lake import connect_readonly
from tests.alerts.support import outbox_rows, start_engine

RULE = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}
GROUPS = ("g1", "g2", "g3")


def _sequences(requests: list[Any]) -> dict[str, list[int]]:
    per_incident: dict[str, list[int]] = defaultdict(list)
    for request in requests:
        per_incident[request.headers[INCIDENT_HEADER]].append(int(request.headers[SEQUENCE_HEADER]))
    return dict(per_incident)


def test_receiver_outage_then_every_notification_once_in_order(
    alert_config, engine_for, webhook_receiver, monkeypatch
) -> None:
    monkeypatch.setenv("LAGWATCH_TEST_HOOK_SECRET", "s3cret")
    receivers = [
        {"name": "ops", "type": "webhook", "url": webhook_receiver.url, "secret_env": "LAGWATCH_TEST_HOOK_SECRET"}
    ]
    config = alert_config([RULE], group_by=["alertname", "cluster", "group_id"], receivers=receivers)
    lake = config.lake.path
    engine = engine_for(config)
    t0 = time.time()
    webhook_receiver.stop()
    for group in GROUPS:
        lake_rows.group_status(lake, t0, group, total_lag=500)
    engine.step(now=t0)
    lake_rows.group_status(lake, t0 + 1, "g1", total_lag=0)  # g1 resolves while the receiver is down
    engine.step(now=t0 + 2)
    assert engine.outbox.pending_count() == 4, "3 firing + 1 resolved wait in the outbox"
    assert webhook_receiver.received() == []

    webhook_receiver.start()
    wait_until(lambda: engine.deliver(budget_s=1) and engine.outbox.pending_count() == 0, 30, "the outbox to drain")

    requests = webhook_receiver.received()
    sequences = _sequences(requests)
    assert len(sequences) == 3
    assert sorted(sequences.values()) == [[1], [1], [1, 2]], "each once, in order per incident"
    for request in requests:
        assert request.headers[SIGNATURE_HEADER] == signature("s3cret", request.body)
    con = connect_readonly(config.lake.path, config.lake.duckdb_path)
    counts = dict(con.execute("SELECT event, count(*) FROM alert_events GROUP BY event").fetchall())
    con.close()
    assert counts["delivered"] == 4 and counts["failed"] >= 3 and counts["firing"] == 3


def _engine_config(tmp_path: Path, webhook_url: str) -> tuple[Path, Path]:
    lake, state = tmp_path / "lake", tmp_path / "state"
    config = write_config(
        tmp_path / "alerts.toml",
        {
            "cluster": {"name": "test"},
            "lake": {"path": str(lake), "duckdb_path": str(tmp_path / "lagwatch.duckdb")},
            "alerts": {
                "state_dir": str(state),
                "use_default_rules": False,
                "leadership": "none",
                "evaluate_every_s": 0.3,
                "group_wait": "0s",
                "group_interval": "1s",
                "group_by": ["alertname", "group_id"],
                "retry_initial_s": 0.2,
                "retry_max_s": 0.5,
            },
        },
        rules=[RULE],
        receivers=[{"name": "ops", "type": "webhook", "url": webhook_url}],
    )
    return config, lake


@pytest.mark.slow
def test_kill_9_with_pending_deliveries_loses_nothing(tmp_path: Path, webhook_receiver) -> None:
    config, lake = _engine_config(tmp_path, webhook_receiver.url)
    state = tmp_path / "state"
    log = tmp_path / "engine.log"
    now = time.time()
    for group in GROUPS:
        lake_rows.group_status(lake, now, group, total_lag=500)
    webhook_receiver.status = 503  # the receiver answers, but fails: deliveries stay pending

    engine = start_engine(config, log)
    try:
        wait_until(lambda: len(outbox_rows(state)) == 3 and all(r[3] >= 2 for r in outbox_rows(state)), 60,
                   "three notifications retried at least twice")  # fmt: skip
    finally:
        os.kill(engine.pid, signal.SIGKILL)
        engine.wait()
    failed_bodies = {
        (r.headers[INCIDENT_HEADER], r.headers[SEQUENCE_HEADER]): r.body for r in webhook_receiver.received()
    }
    assert len(failed_bodies) == 3

    lake_rows.group_status(lake, time.time(), "g2", total_lag=0)  # g2 resolves while the engine is dead
    webhook_receiver.status = 200
    ok_from = len(webhook_receiver.received())
    engine = start_engine(config, log)
    try:
        wait_until(lambda: len(outbox_rows(state)) == 4 and all(r[2] == "delivered" for r in outbox_rows(state)), 60,
                   "all four notifications delivered after the restart")  # fmt: skip
    finally:
        engine.send_signal(signal.SIGTERM)
        assert engine.wait(30) == 0, log.read_text()[-3000:]

    delivered = webhook_receiver.received()[ok_from:]
    pairs = [(r.headers[INCIDENT_HEADER], r.headers[SEQUENCE_HEADER]) for r in delivered]
    assert len(pairs) == len(set(pairs)) == 4, "every notification arrived once after the restart"
    assert {(k, int(s)) for k, s in pairs} == {(r[0], r[1]) for r in outbox_rows(state)}
    for request in delivered:
        key = (request.headers[INCIDENT_HEADER], request.headers[SEQUENCE_HEADER])
        if key in failed_bodies:
            assert request.body == failed_bodies[key], "a re-delivery carries the same key and the same bytes"
    assert sorted(_sequences(delivered).values()) == [[1], [1], [1, 2]]
    assert "Traceback" not in log.read_text()
