"""Push to a real Alertmanager (Debian's prometheus-alertmanager), which forwards to a webhook."""

from __future__ import annotations

import json
import time
import urllib.request

from harness import lake_rows
from harness.polling import wait_until

RULE = {"name": "GroupStalled", "kind": "status", "metric": "status", "by": ["group_id"], "level": "STALL",
        "summary": "group {group_id} is {status}"}  # fmt: skip


def _am_notifications(webhook_receiver, status: str) -> list[dict]:
    return [r.json() for r in webhook_receiver.received() if r.json().get("status") == status]


def test_alertmanager_forwards_firing_and_resolved(alert_config, engine_for, webhook_receiver, alertmanager) -> None:
    am = alertmanager(webhook_receiver.url)
    config = alert_config([RULE], receivers=[{"name": "am", "type": "alertmanager", "url": am.url}])
    engine = engine_for(config)
    lake_rows.group_status(config.lake.path, time.time(), "payments", status="STOP")

    engine.step()
    with urllib.request.urlopen(f"{am.url}/api/v2/alerts") as response:
        held = json.load(response)
    assert [a["labels"]["group_id"] for a in held] == ["payments"], "Alertmanager holds the pushed alert"

    [firing] = wait_until(lambda: _am_notifications(webhook_receiver, "firing"), 30, "Alertmanager's firing webhook")
    alert = firing["alerts"][0]
    assert alert["labels"]["alertname"] == "GroupStalled" and alert["labels"]["group_id"] == "payments"
    assert alert["annotations"]["summary"] == "group payments is STOP"

    lake_rows.group_status(config.lake.path, time.time(), "payments", status="OK")
    engine.step()  # resolved: pushed again with endsAt = now
    [resolved] = wait_until(lambda: _am_notifications(webhook_receiver, "resolved"), 30, "the resolved webhook")
    assert resolved["alerts"][0]["labels"]["group_id"] == "payments"
    assert resolved["alerts"][0]["endsAt"] != "0001-01-01T00:00:00Z"
