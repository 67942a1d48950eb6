"""What each condition carries, read from a shape's rows: rules sharing one query each get only
the series they pass; labels are text in a fixed order (an integer label such as the partition
too); the value is a float; a status rule's word is a label and leaves its reason; a rule with
no `by` reduces every series to one condition; the cycle collector is paused while they are built."""

from __future__ import annotations

import gc
import time

import pytest

from alerts.evaluate import Evaluator, Grid
from alerts.rules import compile_rules
from harness import lake_rows

BY = ["group_id", "topic", "partition"]
RULES = [
    {"name": "BigLag", "metric": "lag", "by": BY, "op": ">", "threshold": 100, "labels": {"team": "a"}},
    {"name": "HugeLag", "metric": "lag", "by": BY, "op": ">", "threshold": 400},  # same query as BigLag
    {"name": "MaxLag", "metric": "lag", "by": [], "op": ">", "threshold": 100},
    {"name": "Unhealthy", "kind": "status", "metric": "status", "by": ["group_id"], "level": "STALL"},
]


def _write(config, now: float) -> None:
    minute = lake_rows.at(now - now % 60)
    row = {"cluster": "test", "group_id": "g", "topic": "t", "window_start": minute}
    lags = {0: 500, 1: 5, 2: 200}
    lake_rows.write(config.lake.path, "lag_1m", [{**row, "partition": p, "lag": lag} for p, lag in lags.items()])
    status = {"cluster": "test", "status": "STOP", "window_start": minute, "updated_at": minute}
    lake_rows.write(
        config.lake.path,
        "group_status",
        [{**status, "group_id": "g", "reason": "STOP: group empty"}, {**status, "group_id": "h", "status": "OK"}],
    )


def test_each_condition_carries_its_own_rows_labels_and_value(alert_config) -> None:
    config = alert_config(RULES)
    now = time.time()
    _write(config, now)
    evaluator = Evaluator(config, compile_rules(config.alerts))
    try:
        found = evaluator.evaluate(now)
    finally:
        evaluator.close()
    by_rule: dict[str, list] = {}
    for c in found:
        by_rule.setdefault(c.rule.name, []).append(c)

    big = sorted(by_rule["BigLag"], key=lambda c: c.labels["partition"])
    assert [(c.labels["partition"], c.value) for c in big] == [("0", 500.0), ("2", 200.0)]
    rule = big[0].rule
    assert rule.labels["team"] == "a"
    assert list(big[0].labels) == ["alertname", "cluster", "severity", *rule.labels, *BY]
    assert big[0].labels == {"alertname": "BigLag", "cluster": "test", "severity": rule.severity,
                             **rule.labels, "group_id": "g", "topic": "t", "partition": "0"}  # fmt: skip
    assert all(type(c.value) is float for c in found)
    assert [(c.labels["partition"], c.value) for c in by_rule["HugeLag"]] == [("0", 500.0)]

    (most,) = by_rule["MaxLag"]
    assert list(most.labels) == ["alertname", "cluster", "severity", *most.rule.labels] and most.value == 500.0

    (unhealthy,) = by_rule["Unhealthy"]
    assert unhealthy.labels["group_id"] == "g" and unhealthy.labels["status"] == "STOP"
    assert unhealthy.extra == {"reason": "group empty", "status": "STOP"}


def test_the_cycle_collector_is_paused_while_conditions_are_built_and_resumed_after(alert_config, monkeypatch) -> None:
    """Millions of conditions at once: the collector's passes over them would find nothing to free."""
    config = alert_config(RULES[:1])
    evaluator = Evaluator(config, compile_rules(config.alerts))
    seen: list[bool] = []

    def shape_timelines(sql, rules, grid):
        seen.append(gc.isenabled())
        raise RuntimeError("a rule failed")

    monkeypatch.setattr(evaluator, "_shape_timelines", shape_timelines)
    try:
        with pytest.raises(RuntimeError):
            evaluator.timelines(Grid(time.time(), 15, 1), strict=True)
        assert evaluator.timelines(Grid(time.time(), 15, 1)) == []  # live: logged, the others run
    finally:
        evaluator.close()
    assert seen == [False, False]
    assert gc.isenabled()
