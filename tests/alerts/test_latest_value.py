"""A rule reads each series' newest row: a NULL there means "no current value", never an
older row's value (a per-column arg_max skips NULLs and would bring a stale ETA back)."""

from __future__ import annotations

import time

from alerts.evaluate import Evaluator
from alerts.rules import compile_rules
from harness import lake_rows

BY = ["group_id", "topic", "partition"]
RULES = [{"name": "SlowCatchUp", "metric": "eta_s", "by": BY, "op": ">", "threshold": 60}]


def test_a_null_newest_value_is_not_replaced_by_an_older_one(alert_config) -> None:
    config = alert_config(RULES)
    lake, now = config.lake.path, time.time()
    newest, older = now - now % 60, now - now % 60 - 60
    row = {"cluster": "test", "group_id": "g", "topic": "t", "lag": 500}
    lake_rows.write(
        lake,
        "lag_1m",
        [
            {**row, "partition": 0, "window_start": lake_rows.at(older), "eta_s": 900.0},
            {**row, "partition": 0, "window_start": lake_rows.at(newest), "eta_s": None},  # not catching up now
            {**row, "partition": 1, "window_start": lake_rows.at(older), "eta_s": 10.0},
            {**row, "partition": 1, "window_start": lake_rows.at(newest), "eta_s": 900.0},
        ],
    )
    evaluator = Evaluator(config, compile_rules(config.alerts))
    try:
        found = {(c.labels["partition"], c.value) for c in evaluator.evaluate(now)}
    finally:
        evaluator.close()
    assert found == {("1", 900.0)}


def test_the_default_retention_rule_fires_under_its_margin(tmp_path) -> None:
    from lagwatch.config import parse_config

    config = parse_config(
        {"lake": {"path": str(tmp_path / "lake"), "duckdb_path": str(tmp_path / "l.duckdb")}}, environ={}
    )
    rules = [r for r in compile_rules(config.alerts) if r.name == "RetentionMarginLow"]
    now = time.time()
    row = {"cluster": config.cluster.name, "group_id": "g", "topic": "t", "window_start": lake_rows.at(now - now % 60)}
    lake_rows.write(
        config.lake.path,
        "lag_1m",
        [{**row, "partition": 0, "retention_margin_s": 600.0}, {**row, "partition": 1, "retention_margin_s": 7200.0}],
    )
    evaluator = Evaluator(config, rules)
    try:
        found = {(c.labels["partition"], c.value) for c in evaluator.evaluate(now)}
    finally:
        evaluator.close()
    assert found == {("0", 600.0)}
