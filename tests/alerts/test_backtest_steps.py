"""The replay's two shortcuts change nothing in its answer.

A backtest reads only the series on which some rule's condition can hold, and visits only the
evaluations where a condition, a silence or a timer can change something. Here, on a small lake
of the benchmark's kind (groups going STALL and STOP, lag spikes, retention running out, a broker
down that inhibits lag pages), with a silence and repeats in range, it must report exactly what
reading every series and stepping every evaluation reports: the same alerts with the same
startsAt and endsAt, the same notifications, the same status changes and delays.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import alerts.backtest
import alerts.evaluate
from alerts.backtest import backtest
from alerts.evaluate import Grid
from alerts.notify import Notifier
from alerts.rules import compile_rules
from bench.bench_backtest import LakeSize, generate
from lagwatch.backtest_report import Report
from lagwatch.config import Config, parse_config
from lagwatch.silences import create_silence

SIZE = LakeSize(days=1, groups=40, partitions=4)
END = dt.datetime.fromisoformat(SIZE.end).timestamp()
EVERY_S = 15.0
#: Rules beside the defaults: one series per partition on lag_1m (status and a long-lived
#: threshold that repeats), and a `>=` on group_status.
EXTRA_RULES: list[dict[str, Any]] = [
    {"name": "PartitionStopped", "kind": "status", "metric": "status", "by": ["group_id", "topic", "partition"],
     "level": "STOP", "for": "1m"},
    {"name": "MarginTight", "metric": "retention_margin_s", "by": ["group_id", "topic", "partition"], "op": "<",
     "threshold": 8_000, "for": "5m"},
    {"name": "TimeLagAtLeast", "metric": "max_time_lag_s", "by": ["group_id"], "op": ">=", "threshold": 600},
]  # fmt: skip


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("backtest-steps") / "lake"
    generate(SIZE, path)
    return path


def _config(lake: Path, state: Path) -> Config:
    receivers = [{"name": "ops", "url": "http://ops.invalid/"}, {"name": "desk", "url": "http://desk.invalid/"}]
    return parse_config(
        {
            "cluster": {"name": "bench"},
            "lake": {"path": str(lake), "duckdb_path": str(state / "lagwatch.duckdb")},
            "alerts": {"state_dir": str(state), "rules": EXTRA_RULES, "receivers": receivers,
                       "group_by": ["alertname", "group_id"], "evaluate_every_s": EVERY_S, "group_wait": "30s",
                       "group_interval": "5m", "repeat_interval": "1h"},
        },
        environ={},
    )  # fmt: skip


def _replay(config: Config) -> tuple[Report, int]:
    """The report, and how many evaluations the notifier was advanced through."""
    visits = [0]
    advance = Notifier.advance

    def counted(self: Notifier, *args: Any, **kwargs: Any) -> Any:
        visits[0] += 1
        return advance(self, *args, **kwargs)

    rules = compile_rules(config.alerts)
    grid = Grid.over(END - SIZE.days * 86_400 + EVERY_S, END - 1, EVERY_S)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Notifier, "advance", counted)
        report = backtest(config, rules, [r.name for r in rules], grid)
    return report, visits[0]


def test_reading_hot_series_and_visiting_changes_equals_stepping_every_evaluation(lake, tmp_path, monkeypatch):
    config = _config(lake, tmp_path / "state")
    silence_from = END - 86_400 + 12 * 3600  # after the broker outage (10:00), so it is the last suppression
    create_silence(config, {"alertname": "MarginTight"}, 3 * 3600, "test", "maintenance", starts_at=silence_from)

    fast, fast_visits = _replay(config)
    with monkeypatch.context() as every:
        every.setattr(alerts.evaluate, "series_filter", lambda *args: "true")
        every.setattr(alerts.backtest, "series_filter", lambda *args: "true")
        every.setattr(alerts.backtest, "_next_step", lambda k, *args: k + 1)
        slow, slow_visits = _replay(config)

    assert slow_visits == fast.steps and fast_visits < fast.steps / 4
    assert fast.rules == slow.rules
    assert fast.status_changes == slow.status_changes
    fired = {r.name: len(r.alerts) for r in fast.rules}
    assert all(fired[name] > 0 for name in ("ConsumerGroupUnhealthy", "ConsumerTimeLagHigh", "BrokerDown",
                                            "UnderReplicatedPartitions", "PartitionStopped", "MarginTight",
                                            "TimeLagAtLeast")), fired  # fmt: skip
    kinds = {n.kind for r in fast.rules for n in r.notifications}
    assert kinds == {"firing", "repeat", "resolved"}
    suppressed = {a.suppressed.split(" ")[0] for r in fast.rules for a in r.alerts if a.suppressed}
    assert suppressed == {"silence", "inhibited"}
    assert any(c.delays.get("ConsumerGroupUnhealthy") is not None for c in fast.status_changes)
