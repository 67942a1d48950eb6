"""Backtest over a lake built from a real broker: a real consumer commits and leaves its group
at a known time, real collector cycles (with DescribeGroups) see it empty, the real Spark job
writes STOP (`stop_empty`) to group_status. A STOP rule replayed over that range raises one
alert for the group a minute after its first STOP row, one notification per receiver, and the
live engine, stepped through the same evaluation times over the same lake, raises the same
alert with the same startsAt. With `for = "10m"` over five minutes of the group dead: nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from alerts.backtest import backtest
from alerts.evaluate import Grid
from alerts.receivers import rfc3339
from alerts.rules import compile_rules
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import AlertsConfig, Config
from tests.collectors.group_members import GroupMember, wait_for
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config

INTERVAL_S = 3.0
CYCLES = 6
EVERY_S = 15.0


def _alerts(config: Config, receiver_url: str, for_: str) -> AlertsConfig:
    rule = {"name": "GroupStopped", "kind": "status", "metric": "status", "by": ["group_id"], "level": "STOP",
            "for": for_}  # fmt: skip
    receivers = [{"name": "ops", "url": receiver_url}, {"name": "desk", "url": receiver_url}]
    return AlertsConfig.model_validate(
        {
            "rules": [rule],
            "receivers": receivers,
            "use_default_rules": False,
            "evaluate_every_s": EVERY_S,
            "leadership": "none",
            "state_dir": config.alerts.state_dir,
        }
    )


@pytest.mark.slow
def test_a_group_that_left_replays_to_one_stop_alert_as_the_live_engine_raises_it(
    spark: Any,
    kafka: KafkaWorkload,
    broker: Any,
    make_config: Callable[..., Config],
    unique: Callable[[str], str],
    engine_for: Callable[[Config], Any],
    webhook_receiver: Any,
):
    prefix = unique("bt")
    topic, leaver = f"{prefix}-topic", f"{prefix}-leaver"
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 1000})
    config = workload_config(make_config, prefix, INTERVAL_S, {leaver: 120}, describe_groups=True, window_s=60)
    member = GroupMember(broker.bootstrap_servers, leaver, topic, "leaver-client", 400)
    wait_for(lambda: member.assigned == {0}, "the leaver to own partition 0")
    collect_then_roll_up(config, CYCLES, lambda cycle: member.close() if cycle == 0 else None, [member.close])

    [(first_stop,)] = lake_rows(
        config, "select epoch_us(min(updated_at)) / 1e6 from group_status where group_id = ? and status = 'STOP'",
        [leaver],
    )  # fmt: skip
    [(first_row,)] = lake_rows(config, "select epoch_us(min(updated_at)) / 1e6 from group_status")
    assert first_stop is not None, "the real pipeline never wrote STOP for the group that left"
    config.alerts = _alerts(config, webhook_receiver.url, "1m")
    grid = Grid.over(first_row - 60, first_stop + 240, EVERY_S)

    report = backtest(config, compile_rules(config.alerts), ["GroupStopped"], grid)

    [alert] = report.rules[0].alerts
    assert alert.labels["group_id"] == leaver
    assert first_stop + 60 <= alert.starts_at < first_stop + 60 + EVERY_S
    firing = [n for n in report.rules[0].notifications if n.kind == "firing"]
    assert sorted(n.receiver for n in firing) == ["desk", "ops"]

    engine = engine_for(config)
    for step in range(grid.steps):
        engine.step(now=grid.at(step))
    live = [r.json() for r in webhook_receiver.received() if r.json()["status"] == "firing"]
    assert len(live) == 2
    assert {a["startsAt"] for payload in live for a in payload["alerts"]} == {rfc3339(alert.starts_at)}

    config.alerts = _alerts(config, webhook_receiver.url, "10m")
    five_minutes_dead = Grid.over(first_row - 60, first_stop + 300, EVERY_S)
    quiet = backtest(config, compile_rules(config.alerts), ["GroupStopped"], five_minutes_dead)
    assert quiet.rules[0].alerts == [] and quiet.rules[0].notifications == []
