"""deploy/alertmanager/alertmanager.yml groups as the engine does: one notification group per
consumer group, broker alerts together.

The shipped file runs in a real Alertmanager with only its receiver URL and timings changed
(group_wait 1 s so the test is quick, group_interval 1 h so a second group's alert that had to
wait for the first group's interval would plainly not arrive); alerts are pushed to its API.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lagwatch.config import AlertsConfig

DEPLOY_FILE = Path(__file__).resolve().parents[2] / "deploy" / "alertmanager" / "alertmanager.yml"


def _push(url: str, *labels: dict[str, str]) -> None:
    body = json.dumps([{"labels": {"cluster": "prod", **one}} for one in labels]).encode()
    request = urllib.request.Request(f"{url}/api/v2/alerts", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def _wait_bodies(receiver: Any, count: int, timeout_s: float = 15) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while len(receiver.received()) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return [r.json() for r in receiver.received()]


def test_the_shipped_file_is_valid_and_groups_by_the_engines_default_plus_prometheus_group_label():
    subprocess.run(["amtool", "check-config", str(DEPLOY_FILE)], check=True, capture_output=True)
    [group_by] = re.findall(r"^\s*group_by:\s*\[(.*)\]", DEPLOY_FILE.read_text(), re.MULTILINE)
    assert [label.strip() for label in group_by.split(",")] == [*AlertsConfig().group_by[:2], "group", "group_id"]
    assert "group_id" in AlertsConfig().group_by


def test_two_consumer_groups_are_notified_apart_and_brokers_together(
    alertmanager: Callable[..., Any], webhook_receiver: Any
) -> None:
    text = DEPLOY_FILE.read_text().replace("http://127.0.0.1:9000/hook", webhook_receiver.url)
    text = text.replace("group_wait: 30s", "group_wait: 1s").replace("group_interval: 5m", "group_interval: 1h")
    running = alertmanager(webhook_receiver.url, config=text)
    _push(running.url, {"alertname": "ConsumerGroupUnhealthy", "group": "g-stalled"})
    [first] = _wait_bodies(webhook_receiver, 1)
    assert first["groupLabels"] == {"alertname": "ConsumerGroupUnhealthy", "cluster": "prod", "group": "g-stalled"}

    _push(running.url, {"alertname": "ConsumerGroupUnhealthy", "group": "g-rewound"})
    _push(running.url, {"alertname": "BrokerDown", "broker": "1"}, {"alertname": "BrokerDown", "broker": "2"})
    bodies = _wait_bodies(webhook_receiver, 3)
    by_name = {(b["groupLabels"]["alertname"], b["groupLabels"].get("group")): b for b in bodies[1:]}
    assert set(by_name) == {("ConsumerGroupUnhealthy", "g-rewound"), ("BrokerDown", None)}
    assert sorted(a["labels"]["broker"] for a in by_name[("BrokerDown", None)]["alerts"]) == ["1", "2"]
