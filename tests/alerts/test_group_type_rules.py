"""Alert rules match on a group's type through the `consumer_group_type` metric (no alerts code
change): compiled like any rule and evaluated over a real lake by DuckDB."""

from __future__ import annotations

import time

from alerts.evaluate import Evaluator
from alerts.rules import compile_rules
from harness import lake_rows
from lagwatch.membership import GROUP_TYPE_CODE

RULES = [
    {
        "name": "Kip848Group",
        "metric": "consumer_group_type",
        "by": ["group_id"],
        "op": "==",
        "threshold": GROUP_TYPE_CODE["consumer"],
    },
]


def test_a_rule_selects_the_consumer_protocol_groups(alert_config) -> None:
    config = alert_config(RULES)
    [rule] = compile_rules(config.alerts)
    assert rule.source.table == "metrics_1m"
    lake, t0 = config.lake.path, time.time() - 30
    for group, group_type in (("orders-kip848", "consumer"), ("orders-classic", "classic")):
        lake_rows.metric(lake, t0, "consumer_group_type", GROUP_TYPE_CODE[group_type], group_id=group, source="admin")
    evaluator = Evaluator(config, [rule])
    try:
        found = {c.labels["group_id"] for c in evaluator.evaluate(time.time())}
    finally:
        evaluator.close()
    assert found == {"orders-kip848"}
