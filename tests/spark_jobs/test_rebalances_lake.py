"""Every rebalance reaches group_status, end to end: a classic group (and on Kafka 4 a KIP-848
group, by its group epoch) on the real broker made to rebalance N times between two collector
cycles → real collector cycles (commit log on) → samples topic → real Spark job → lake.
`rebalances` of the group's newest row is N (the collector cycles see one member owning the
partition before and after), the reason names the storm and `storm_rebalances` holds the count
it names (what the RebalanceStorm alert rule reads), and the seconds spent rebalancing are
measured. With `collect.commit_log = "off"` the count falls back to the cycles that saw a
rebalance, and misses those between two cycles."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.collectors.group_members import GroupMember, wait_for
from tests.collectors.rebalancing import rebalance
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config

INTERVAL_S = 3.0
CYCLES = 3
REBALANCES = 4


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_n_rebalances_between_two_cycles_make_rebalances_n(
    spark: Any,
    kafka: KafkaWorkload,
    broker: Any,
    make_config: Callable[..., Config],
    unique: Callable[[str], str],
    protocol: str,
):
    if protocol == "consumer" and broker.version < (4, 0, 0):
        pytest.skip(f"Kafka {broker.version_text} has no consumer (KIP-848) groups")
    rebalances, rebalancing_s, reason, members, storm = rebalanced_group_row(
        kafka, broker, make_config, unique, protocol
    )
    assert (rebalances, members) == (REBALANCES, 1), reason
    named = re.search(r"rebalance storm: (\d+) rebalances in 5m", reason)
    assert named is not None, reason
    assert storm == int(named.group(1)) == REBALANCES, reason
    assert rebalancing_s is not None and 0 <= rebalancing_s <= 300


@pytest.mark.slow
def test_without_the_commit_log_only_the_cycles_that_saw_a_rebalance_count(
    spark: Any, kafka: KafkaWorkload, broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str]
):
    rebalances, _, reason, members, storm = rebalanced_group_row(kafka, broker, make_config, unique, "classic", "off")
    assert members == 1 and rebalances < REBALANCES, reason  # the documented fallback: between-cycle ones are missed
    assert "rebalance storm" not in reason
    assert storm == 0, "no storm: 0, not NULL (NULL is a row written before the column existed)"


def rebalanced_group_row(
    kafka: KafkaWorkload,
    broker: Any,
    make_config: Callable[..., Config],
    unique: Callable[[str], str],
    protocol: str,
    commit_log: str = "auto",
) -> tuple[Any, ...]:
    """The newest group_status row of a group made to rebalance REBALANCES times after cycle 0."""
    prefix = unique("rb")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 100})
    config = workload_config(
        make_config,
        prefix,
        INTERVAL_S,
        {group: 600},
        describe_groups=True,
        window_s=300,
        rebalance_storm_count=REBALANCES,
        rebalance_storm_window_s=300,
    )
    config = config.model_copy(update={"collect": config.collect.model_copy(update={"commit_log": commit_log})})
    first = GroupMember(broker.bootstrap_servers, group, topic, "first", 10, protocol)
    wait_for(lambda: first.committed == {0}, "the first member to own and commit partition 0")

    def after_cycle(cycle: int) -> None:
        if cycle == 0:
            rebalance(broker.bootstrap_servers, group, topic, REBALANCES, protocol=protocol)

    collect_then_roll_up(config, CYCLES, after_cycle, cleanup=[first.close])
    rows = lake_rows(
        config,
        "select rebalances, rebalancing_s, reason, members, storm_rebalances from group_status where group_id = ? "
        "qualify row_number() over (order by updated_at desc) = 1",
        [group],
    )
    assert len(rows) == 1
    return rows[0]
