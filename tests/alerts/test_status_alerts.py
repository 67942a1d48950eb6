"""A status alert says the status: ConsumerGroupUnhealthy's label, summary, event row and Alerts page.

The default rule fires for any group status from STALL up; what the operator reads must be the
status word (STOP), never the severity index the rule compares (4). Real engine, real lake rows,
real webhook receiver, and the dashboard's own Alerts-page query over the events the engine wrote.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from typing import Any

import pytest

from alerts.rules import compile_rules
from dashboard.queries import Lake, Scope
from dashboard.queries import alerts as alert_queries
from harness import lake_rows
from lagwatch.config import ConfigError, parse_config
from lagwatch.lake import connect_readonly


def _delivered(webhook_receiver: Any) -> list[dict[str, Any]]:
    return [a for request in webhook_receiver.received() for a in request.json()["alerts"]]


def _events(config: Any, alertname: str) -> list[tuple[str, float, str | None, str]]:
    con = connect_readonly(config.lake.path, config.lake.duckdb_path)
    try:
        return con.execute(
            "SELECT event, value, value_text, json_extract_string(labels, 'status') FROM alert_events "
            "WHERE alertname = ? AND event IN ('firing', 'resolved') ORDER BY ts, event",
            [alertname],
        ).fetchall()
    finally:
        con.close()


def test_the_default_status_alert_carries_the_status_word_everywhere(
    alert_config, engine_for, webhook_receiver
) -> None:
    config = alert_config([], use_default_rules=True)
    t0 = time.time()
    reason = "STOP: group empty for 3 cycles since 10:41:00, no commit since (committed offset 12, lag 4) [o/0]"
    lake_rows.group_status(config.lake.path, t0, "orders", status="STOP", reason=reason)
    engine_for(config).step(now=t0)

    [alert] = [a for a in _delivered(webhook_receiver) if a["labels"]["alertname"] == "ConsumerGroupUnhealthy"]
    assert alert["labels"]["status"] == "STOP"
    assert alert["labels"]["previous_alertname"] == "ConsumerGroupStalled"
    assert alert["annotations"]["summary"] == f"Consumer group orders is {reason}", "the status word said once"
    assert _events(config, "ConsumerGroupUnhealthy") == [("firing", 4.0, "STOP", "STOP")]

    scope = Scope("test", dt.datetime.fromtimestamp(t0 - 3600, dt.UTC), dt.datetime.fromtimestamp(t0 + 60, dt.UTC))
    frames = alert_queries.load(Lake.from_config(config), scope)
    firing, events = frames["firing"], frames["events"]
    assert firing.loc[firing["alertname"] == "ConsumerGroupUnhealthy", "value"].tolist() == ["STOP"], "Firing now"
    history = events[(events["alertname"] == "ConsumerGroupUnhealthy") & (events["event"] == "firing")]
    assert history["value"].tolist() == ["STOP"], "History: the word, not the severity index"


def test_a_number_valued_alert_still_shows_its_number(alert_config, engine_for) -> None:
    rule = {"name": "GroupLagHigh", "metric": "total_lag", "by": ["group_id"], "op": ">", "threshold": 100}
    config = alert_config([rule])
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "orders", total_lag=4200)
    engine_for(config).step(now=t0)

    assert _events(config, "GroupLagHigh") == [("firing", 4200.0, None, None)]
    scope = Scope("test", dt.datetime.fromtimestamp(t0 - 3600, dt.UTC), dt.datetime.fromtimestamp(t0 + 60, dt.UTC))
    events = alert_queries.load(Lake.from_config(config), scope)["events"]
    assert events.loc[events["event"] == "firing", "value"].tolist() == ["4200"]


def test_a_group_going_from_stall_to_stop_resolves_the_stall_alert_and_fires_a_stop_one(
    alert_config, engine_for, webhook_receiver
) -> None:
    """As in Prometheus, where the status is a label of the series; the Alerts page's "Firing now"
    lists every firing alert (orders at STOP, billing still at STALL) and not the resolved one."""
    config = alert_config([], use_default_rules=True)
    lake, t0 = config.lake.path, time.time() - 120
    lake_rows.group_status(lake, t0, "orders", status="STALL")
    lake_rows.group_status(lake, t0, "billing", status="STALL")
    engine = engine_for(config)
    engine.step(now=t0)
    lake_rows.group_status(lake, t0 + 60, "orders", status="STOP")
    lake_rows.group_status(lake, t0 + 60, "billing", status="STALL")
    engine.step(now=t0 + 61)

    sent = [(a["labels"]["status"], a["status"]) for a in _delivered(webhook_receiver)
            if a["labels"]["group_id"] == "orders"]  # fmt: skip
    assert sent == [("STALL", "firing"), ("STOP", "firing"), ("STALL", "resolved")]
    events = [(e, text) for e, _, text, _ in _events(config, "ConsumerGroupUnhealthy")]
    assert events.count(("firing", "STALL")) == 2 and events[-2:] == [("firing", "STOP"), ("resolved", "STALL")]
    scope = Scope("test", dt.datetime.fromtimestamp(t0 - 3600, dt.UTC), dt.datetime.fromtimestamp(t0 + 120, dt.UTC))
    firing = alert_queries.load(Lake.from_config(config), scope)["firing"]
    rows = zip(firing["labels"], firing["value"], strict=True)
    shown = sorted((json.loads(labels)["group_id"], value) for labels, value in rows)
    assert shown == [("billing", "STALL"), ("orders", "STOP")]


def _status_rule(**keys: Any) -> dict[str, Any]:
    return {"name": "PartitionBad", "kind": "status", "metric": "status", "by": ["group_id"], "level": "STOP", **keys}


def test_value_in_a_status_rules_template_is_the_status_word(alert_config, engine_for, webhook_receiver) -> None:
    config = alert_config([_status_rule(summary="{group_id}: {value} ({reason})")])
    t0 = time.time()
    lake_rows.group_status(config.lake.path, t0, "billing", status="LOSS")
    engine_for(config).step(now=t0)

    [alert] = _delivered(webhook_receiver)
    assert alert["annotations"]["summary"] == "billing: LOSS (LOSS reason)"
    assert alert["labels"]["status"] == "LOSS"
    assert "previous_alertname" not in alert["labels"], "only a renamed rule carries its old name"


def test_a_number_format_on_a_status_value_is_refused_at_start_up() -> None:
    data = {"alerts": {"rules": [_status_rule(summary="{group_id} at {value:.0f}")], "use_default_rules": False}}
    alerts = parse_config(data, environ={}).alerts
    expected = "alerts.rules 'PartitionBad': summary: bad template '{group_id} at {value:.0f}'"
    with pytest.raises(ConfigError, match=re.escape(expected)) as error:
        compile_rules(alerts)
    assert "{value} of a status rule is the status word" in str(error.value)
