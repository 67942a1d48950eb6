"""Default rules over lake rows, the Slack-compatible body, and the engine beside another server."""

from __future__ import annotations

import time

from alerts.engine import start_in_background
from harness import lake_rows
from harness.polling import wait_until

LAG_RULE = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}


def test_default_rules_fire_on_lake_rows(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([], use_default_rules=True, group_by=["alertname"])
    lake = config.lake.path
    t0 = time.time()
    lake_rows.metric(lake, t0, "offline_partitions", 2.0, broker="1")
    lake_rows.metric(lake, t0, "active_controller_count", 1.0, broker="1")  # healthy: must not fire
    lake_rows.group_status(lake, t0, "orders", status="STOP")
    lake_rows.group_status(lake, t0, "billing", status="OK")
    dead_letter = {"cluster": "test", "received_at": lake_rows.at(t0), "source_topic": "s", "source_offset": 7}
    lake_rows.write(lake, "dead_letters", [{**dead_letter, "raw": "{", "error": "bad json"}])
    progress = {"cluster": "test", "query": "windows", "batch_id": 1, "ts": lake_rows.at(t0), "freshness_s": 120.0}
    lake_rows.write(lake, "pipeline_progress", [progress])
    engine_for(config).step(now=t0)

    alerts = {a["labels"]["alertname"]: a for r in webhook_receiver.received() for a in r.json()["alerts"]}
    assert set(alerts) == {"OfflinePartitions", "ConsumerGroupUnhealthy", "DeadLettersGrowing", "PipelineStale"}
    assert alerts["ConsumerGroupUnhealthy"]["labels"]["group_id"] == "orders"
    assert alerts["ConsumerGroupUnhealthy"]["annotations"]["summary"] == "Consumer group orders is STOP: STOP reason"
    assert alerts["PipelineStale"]["annotations"]["summary"] == "Lake data is 120 s behind (query windows)"


def test_slack_body(alert_config, engine_for, webhook_receiver) -> None:
    receivers = [{"name": "chat", "type": "slack", "url": webhook_receiver.url}]
    config = alert_config([{**LAG_RULE, "summary": "lag of {group_id} is {value:.0f}"}], receivers=receivers)
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "g1", total_lag=400)
    engine_for(config).step(now=t0)
    [request] = webhook_receiver.received()
    body = request.json()
    assert body["text"] == "[FIRING:1] GroupLagHigh"
    assert body["attachments"][0]["text"] == "lag of g1 is 400"
    assert body["attachments"][0]["color"] == "danger"


def test_background_engine_sends_and_stops(alert_config, webhook_receiver) -> None:
    config = alert_config([LAG_RULE], leadership="none", evaluate_every_s=0.2)
    lake_rows.group_status(config.lake.path, time.time(), "g1", total_lag=400)
    handle = start_in_background(config)
    try:
        wait_until(webhook_receiver.received, 30, "the background engine's notification")
    finally:
        handle.stop()
    assert not handle.is_alive()
    assert webhook_receiver.received()[0].json()["alerts"][0]["labels"]["group_id"] == "g1"
