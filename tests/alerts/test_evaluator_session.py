"""The live evaluator reopens its DuckDB session every SESSION_EVALUATIONS evaluations (a session
kept for good holds on to memory), and an evaluation across the reopening finds the same."""

from __future__ import annotations

import time

from alerts.evaluate import SESSION_EVALUATIONS, Evaluator
from alerts.rules import compile_rules
from harness import lake_rows

RULES = [{"name": "BigLag", "metric": "lag", "by": ["group_id", "topic", "partition"], "op": ">", "threshold": 100}]


def test_the_session_is_reopened_and_the_conditions_stay_the_same(alert_config) -> None:
    config = alert_config(RULES)
    now = time.time()
    row = {"cluster": "test", "group_id": "g", "topic": "t", "window_start": lake_rows.at(now - now % 60)}
    rows = [{**row, "partition": 0, "lag": 500}, {**row, "partition": 1, "lag": 5}]
    lake_rows.write(config.lake.path, "lag_1m", rows)
    evaluator = Evaluator(config, compile_rules(config.alerts))
    try:
        first = {(c.labels["partition"], c.value) for c in evaluator.evaluate(now)}
        sessions = [evaluator.connection()]  # held, so a new session never reuses an old one's id
        found = []
        for _ in range(SESSION_EVALUATIONS):
            found.append({(c.labels["partition"], c.value) for c in evaluator.evaluate(now)})
            if evaluator.connection() is not sessions[-1]:
                sessions.append(evaluator.connection())
    finally:
        evaluator.close()
    assert first == {("0", 500.0)}
    assert all(f == first for f in found)
    assert len(sessions) == 2  # one reopening in SESSION_EVALUATIONS evaluations
