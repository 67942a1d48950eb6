"""Alertmanager semantics over a real lake, delivered to a real HTTP receiver.

Time moves by an injected clock and by writing lake rows; delivery is real HTTP.
"""

from __future__ import annotations

import time
from typing import Any

from alerts.receivers import INCIDENT_HEADER, SEQUENCE_HEADER
from harness import lake_rows
from lagwatch.lake import connect_readonly
from lagwatch.silences import create_silence, expire_silence, list_silences

LAG_RULE = {
    "name": "GroupLagHigh",
    "metric": "total_lag",
    "by": ["group_id"],
    "op": ">",
    "threshold": 100,
    "for": "2s",
    "summary": "group {group_id} lag {value:.0f}",
}
BROKER_DOWN = {"name": "BrokerDown", "metric": "up", "by": ["broker"], "op": "==", "threshold": 0}


def _events(config: Any) -> list[tuple[str, str]]:
    con = connect_readonly(config.lake.path, config.lake.duckdb_path)
    try:
        return con.execute("SELECT event, alertname FROM alert_events ORDER BY ts, event").fetchall()
    finally:
        con.close()


def _bodies(webhook_receiver: Any) -> list[dict[str, Any]]:
    return [r.json() for r in webhook_receiver.received()]


def test_fires_only_after_for_then_resolves(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([LAG_RULE])
    lake = config.lake.path
    engine = engine_for(config)
    t0 = time.time()
    lake_rows.group_status(lake, t0, "g1", total_lag=500)

    engine.step(now=t0)
    engine.step(now=t0 + 1.0)
    assert webhook_receiver.received() == [], "pending for less than `for` must not notify"

    engine.step(now=t0 + 2.5)
    state = engine.store.get_json("notifier", {})  # what the engine persisted
    assert [(a["labels"]["group_id"], a["state"]) for a in state["alerts"].values()] == [("g1", "firing")]
    [firing] = _bodies(webhook_receiver)
    assert firing["version"] == "4" and firing["status"] == "firing"
    assert firing["alerts"][0]["labels"]["group_id"] == "g1"
    assert firing["alerts"][0]["annotations"]["summary"] == "group g1 lag 500"
    assert firing["groupLabels"] == {"alertname": "GroupLagHigh", "cluster": "test", "group_id": "g1"}

    lake_rows.group_status(lake, t0 + 3, "g1", total_lag=0)
    engine.step(now=t0 + 4.0)
    requests = webhook_receiver.received()
    assert [r.json()["status"] for r in requests] == ["firing", "resolved"]
    assert requests[1].json()["alerts"][0]["endsAt"] != "0001-01-01T00:00:00Z"
    assert len({r.headers[INCIDENT_HEADER] for r in requests}) == 1
    assert [r.headers[SEQUENCE_HEADER] for r in requests] == ["1", "2"]

    events = [e for e, _ in _events(config)]
    assert events.count("firing") == 1 and events.count("resolved") == 1 and events.count("delivered") == 2


def test_repeats_after_repeat_interval(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([{**LAG_RULE, "for": "0s"}], repeat_interval="3s")
    engine = engine_for(config)
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "g1", total_lag=500)

    engine.step(now=t0)
    engine.step(now=t0 + 1.5)
    assert len(webhook_receiver.received()) == 1, "nothing changed and repeat_interval not reached"
    engine.step(now=t0 + 3.5)
    requests = webhook_receiver.received()
    assert len(requests) == 2
    assert requests[1].json()["status"] == "firing"
    assert requests[1].headers[INCIDENT_HEADER] == requests[0].headers[INCIDENT_HEADER]
    assert "repeat" in [e for e, _ in _events(config)]


def test_silence_suppresses_then_expiry_notifies(alert_config, engine_for, webhook_receiver) -> None:
    # One notification group for both groups, so the expired silence shows as g1 joining g2's.
    config = alert_config([{**LAG_RULE, "for": "0s"}], group_by=["alertname", "cluster"])
    engine = engine_for(config)
    t0 = time.time()
    silence_id = create_silence(config, {"group_id": "g1"}, 3600, "tester", "maintenance", starts_at=t0 - 1)
    assert [s["id"] for s in list_silences(config) if s["active"]] == [silence_id]
    lake_rows.group_status(config.lake.path, t0, "g1", total_lag=500)
    lake_rows.group_status(config.lake.path, t0, "g2", total_lag=700)

    engine.step(now=t0)
    [only] = _bodies(webhook_receiver)
    assert [a["labels"]["group_id"] for a in only["alerts"]] == ["g2"], "g1 is silenced"
    assert ("silenced", "GroupLagHigh") in _events(config)

    assert expire_silence(config, silence_id)
    engine.step(now=time.time() + 2)
    bodies = _bodies(webhook_receiver)
    assert len(bodies) == 2
    assert sorted(a["labels"]["group_id"] for a in bodies[1]["alerts"]) == ["g1", "g2"]


def test_broker_down_inhibits_lag_pages(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([{**LAG_RULE, "for": "0s"}, BROKER_DOWN])
    lake = config.lake.path
    engine = engine_for(config)
    t0 = time.time()
    lake_rows.metric(lake, t0, "up", 0.0, broker="1")
    lake_rows.group_status(lake, t0, "g1", total_lag=500)

    engine.step(now=t0)
    names = {a["labels"]["alertname"] for body in _bodies(webhook_receiver) for a in body["alerts"]}
    assert names == {"BrokerDown"}, "the lag page must be inhibited while the broker is down"
    assert ("inhibited", "GroupLagHigh") in _events(config)

    lake_rows.metric(lake, t0 + 1, "up", 1.0, broker="1")
    engine.step(now=t0 + 2)
    bodies = _bodies(webhook_receiver)
    lag_pages = [b for b in bodies if b["groupLabels"]["alertname"] == "GroupLagHigh"]
    assert len(lag_pages) == 1 and lag_pages[0]["status"] == "firing"
    assert any(b["groupLabels"]["alertname"] == "BrokerDown" and b["status"] == "resolved" for b in bodies)
