"""Membership decides STOP and STALL, end to end: real consumers in groups on the real broker →
real collector cycles with DescribeGroups → samples topic → real Spark job → lake, read by DuckDB.

One partition of 1,000 records, collected every 3 s, with a stop limit (120 s) far beyond the
run, so no time rule can decide:
- a stuck member joins, commits offset 300 once and holds the partition without moving: STALL
  (`stall_owned`) from the cycle its offset has stood still for 2 cycles, naming the member;
- a leaver commits 400, then leaves the group after the first cycle: the group is empty from the
  next cycle on, so STOP (`stop_empty`) once it was seen empty for 2 cycles;
- a mover's owner changes mid-lag: member a commits 200 and leaves, member b joins and commits
  250; the group's reason names the rebalances and lag_1m counts the owner change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.collectors.group_members import GroupMember, wait_for
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config

INTERVAL_S = 3.0
CYCLES = 6
STOP_AFTER_S = 120


@pytest.mark.slow
def test_membership_decides_stop_and_stall_and_names_the_owner(
    spark: Any, kafka: KafkaWorkload, broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str]
):
    prefix = unique("ms")
    topic, stuck, leaver, mover = (f"{prefix}-{name}" for name in ("topic", "stuck", "leaver", "mover"))
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 1000})
    config = workload_config(
        make_config,
        prefix,
        INTERVAL_S,
        dict.fromkeys((stuck, leaver, mover), STOP_AFTER_S),
        describe_groups=True,
        window_s=60,
    )
    members = {
        name: GroupMember(broker.bootstrap_servers, group, topic, f"{name}-client", offset)
        for name, group, offset in (("stuck", stuck, 300), ("leaver", leaver, 400), ("mover-a", mover, 200))
    }
    for member in members.values():
        wait_for(lambda m=member: m.assigned == {0}, f"{member.client_id} to own partition 0")

    def after_cycle(cycle: int) -> None:
        if cycle == 0:
            members["leaver"].close()
        if cycle == 1:
            members["mover-a"].close()
            members["mover-b"] = GroupMember(broker.bootstrap_servers, mover, topic, "mover-b-client", 250)
            wait_for(lambda: members["mover-b"].assigned == {0}, "mover-b to own partition 0")

    def close_members() -> None:
        for member in members.values():
            member.close()

    collect_then_roll_up(config, CYCLES, after_cycle, cleanup=[close_members])

    groups = [stuck, leaver, mover]
    newest = {
        group: (status, rule, reason, members_count, rebalances)
        for group, status, rule, reason, members_count, rebalances in lake_rows(
            config,
            "select group_id, status, rule, reason, members, rebalances from group_status where group_id in (?, ?, ?) "
            "qualify row_number() over (partition by group_id order by updated_at desc) = 1",
            groups,
        )
    }
    assert {group: newest[group][:2] for group in groups} == {
        stuck: ("STALL", "stall_owned"),
        leaver: ("STOP", "stop_empty"),
        mover: ("STALL", "stall_owned"),
    }
    assert newest[stuck][2].startswith("STALL: committed offset 300 unchanged at ")
    assert "while stuck-client on /" in newest[stuck][2] and "owns it, lag 700" in newest[stuck][2]
    assert f"[{topic}/0]" in newest[stuck][2]
    assert newest[leaver][2].startswith("STOP: group empty for ")
    assert "no commit since (committed offset 400, lag 600)" in newest[leaver][2]
    assert newest[leaver][3] == 0
    assert "while mover-b-client on /" in newest[mover][2]
    assert newest[mover][4] >= 1 and f"rebalance{'s' if newest[mover][4] > 1 else ''} in 1m" in newest[mover][2]

    # The first STALL of the stuck group: its offset had stood still for 2 cycles (3 s apart).
    first = lake_rows(
        config,
        "select rule, reason from lag_1m where group_id = ? and status = 'STALL' order by window_start limit 1",
        [stuck],
    )
    assert first and first[0][0] == "stall_owned"
    mover_rows = lake_rows(
        config,
        "select window_start, owner_client_id, owner_changes, lag, status from lag_1m where group_id = ? "
        "order by 1",
        [mover],
    )
    assert sum(row[2] or 0 for row in mover_rows) >= 1, mover_rows
