"""Default notification grouping: each consumer group is its own notification group.

Why: with groups keyed by alert name and cluster alone, a status change of one consumer group
joined the open group of another that had already notified, and waited out that group's
`group_interval` (5 m) instead of its own `group_wait` (30 s): a rewind reached the webhook
241 s after the lake had it. Time moves by the injected clock and lake rows; delivery is real
HTTP, with the shipped timings (group_wait 30 s, group_interval 5 m).
"""

from __future__ import annotations

import time
from typing import Any

from harness import lake_rows

STATUS_RULE = {"name": "GroupNotOk", "kind": "status", "metric": "status", "by": ["group_id"], "level": "WARN"}
BROKER_DOWN = {"name": "BrokerDown", "metric": "up", "by": ["broker"], "op": "==", "threshold": 0}
SHIPPED = {"group_wait": "30s", "group_interval": "5m"}


def _bodies(webhook_receiver: Any) -> list[dict[str, Any]]:
    return [r.json() for r in webhook_receiver.received()]


def test_a_second_groups_status_change_is_sent_after_its_own_group_wait(
    alert_config, engine_for, webhook_receiver
) -> None:
    config = alert_config([STATUS_RULE], **SHIPPED)
    engine = engine_for(config)
    lake = config.lake.path
    t0 = time.time() - 120
    lake_rows.group_status(lake, t0, "g-stalled", status="STALL")
    engine.step(now=t0)
    engine.step(now=t0 + 30)
    assert [b["groupLabels"]["group_id"] for b in _bodies(webhook_receiver)] == ["g-stalled"]

    lake_rows.group_status(lake, t0 + 60, "g-rewound", status="REWIND")
    engine.step(now=t0 + 60)
    engine.step(now=t0 + 89)
    assert len(_bodies(webhook_receiver)) == 1, "its group_wait (30 s) has not passed yet"
    engine.step(now=t0 + 90)  # 240 s before g-stalled's group is looked at again
    bodies = _bodies(webhook_receiver)
    assert [b["groupLabels"] for b in bodies[1:]] == [
        {"alertname": "GroupNotOk", "cluster": "test", "group_id": "g-rewound"}
    ]
    assert [a["labels"]["group_id"] for a in bodies[1]["alerts"]] == ["g-rewound"]


def test_broker_alerts_still_share_one_notification(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([BROKER_DOWN], **SHIPPED)
    engine = engine_for(config)
    t0 = time.time() - 60
    lake_rows.metric(config.lake.path, t0, "up", 0.0, broker="1")
    lake_rows.metric(config.lake.path, t0, "up", 0.0, broker="2")
    engine.step(now=t0)
    engine.step(now=t0 + 30)
    [body] = _bodies(webhook_receiver)
    assert body["groupLabels"] == {"alertname": "BrokerDown", "cluster": "test"}
    assert sorted(a["labels"]["broker"] for a in body["alerts"]) == ["1", "2"]
