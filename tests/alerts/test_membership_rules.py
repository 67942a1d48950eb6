"""Rules on membership: the member count from metrics_1m, rebalances from group_status, owner
changes from lag_1m; compiled like any rule and evaluated over a real lake by DuckDB."""

from __future__ import annotations

import time

from alerts.evaluate import Evaluator
from alerts.rules import compile_rules
from harness import lake_rows

RULES = [
    {"name": "GroupHasNoMembers", "metric": "consumer_group_members", "by": ["group_id"], "op": "<", "threshold": 1},
    {"name": "GroupRebalancing", "metric": "rebalances", "by": ["group_id"], "op": ">", "threshold": 0},
    {
        "name": "PartitionMoved",
        "metric": "owner_changes",
        "by": ["group_id", "topic", "partition"],
        "op": ">",
        "threshold": 0,
    },
]


def test_membership_fields_are_rule_metrics_and_match_their_groups(alert_config) -> None:
    config = alert_config(RULES)
    compiled = {rule.name: rule for rule in compile_rules(config.alerts)}
    assert {name: rule.source.table for name, rule in compiled.items()} == {
        "GroupHasNoMembers": "metrics_1m",
        "GroupRebalancing": "group_status",
        "PartitionMoved": "lag_1m",
    }
    lake, t0 = config.lake.path, time.time() - 30
    for group, members in (("orders-dead", 0), ("orders-live", 2)):
        lake_rows.metric(lake, t0, "consumer_group_members", members, group_id=group, source="admin")
    lake_rows.group_status(lake, t0, "orders-live", members=2, group_state="Stable", rebalances=1)
    lake_rows.group_status(lake, t0, "orders-calm", members=3, group_state="Stable", rebalances=0)
    lag = {"cluster": "test", "window_start": lake_rows.at(t0 - t0 % 60), "group_id": "orders-live", "topic": "t"}
    lake_rows.write(lake, "lag_1m", [{**lag, "partition": p, "lag": 9, "owner_changes": p} for p in (0, 1)])

    evaluator = Evaluator(config, list(compiled.values()))
    try:
        found = {(c.rule.name, tuple(sorted(c.labels.items()))) for c in evaluator.evaluate(time.time())}
    finally:
        evaluator.close()

    def labels(name: str, **by: object) -> tuple[str, tuple]:
        rule = compiled[name]
        values = {"alertname": name, "cluster": "test", "severity": rule.severity, **rule.labels, **by}
        return name, tuple(sorted((k, str(v)) for k, v in values.items()))

    assert found == {
        labels("GroupHasNoMembers", group_id="orders-dead"),
        labels("GroupRebalancing", group_id="orders-live"),
        labels("PartitionMoved", group_id="orders-live", topic="t", partition=1),
    }
