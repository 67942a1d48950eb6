"""KIP-848 groups judged like classic ones, end to end: real consumers (`group.protocol=consumer` on
Kafka 4, classic on 3.x) → real collector cycles every 5 s → samples topic → real Spark job → lake.

With the shipped lag defaults, three collector cycles and one stream pass:
- `stuck`: offsets first committed by a classic client, then 2 live members that never commit
  join (on Kafka 4 the broker converts the group to the consumer protocol, rewriting its records
  in `__consumer_offsets`): STALL (`stall_owned`), the owner named, 2 members;
- `gone`: a member commits and leaves before the first cycle: lag and no members, STOP (`stop_empty`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from tests.collectors.group_members import GroupMember, wait_for
from tests.spark_jobs.lake_workload import collect_then_roll_up, lake_rows, workload_config

INTERVAL_S = 5.0
CYCLES = 3


def member_protocol(broker: Any) -> str:
    """The protocol the Done-when line names: KIP-848 on Kafka 4, classic on 3.x."""
    return "consumer" if broker.version >= (4, 0, 0) else "classic"


@pytest.mark.slow
def test_kip848_group_is_stall_with_its_owner_and_stop_when_empty(
    spark: Any, kafka: KafkaWorkload, broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str]
):
    prefix = unique("k848")
    topic, stuck, gone = f"{prefix}-topic", f"{prefix}-stuck", f"{prefix}-gone"
    protocol = member_protocol(broker)
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 1000, 1: 1000})
    config = workload_config(make_config, prefix, INTERVAL_S, {}, describe_groups=True)

    leaver = GroupMember(broker.bootstrap_servers, gone, topic, "gone-client", 400, protocol=protocol)
    wait_for(lambda: leaver.assigned == {0, 1}, "gone-client to own both partitions")
    wait_for(lambda: leaver.committed == {0, 1}, "gone-client to commit")
    leaver.close()

    kafka.commit(stuck, topic, {0: 100, 1: 100})  # a classic client's commit, before the members join
    members = [
        GroupMember(broker.bootstrap_servers, stuck, topic, f"stuck-{i}", None, protocol=protocol) for i in range(2)
    ]
    wait_for(lambda: sorted(len(m.assigned) for m in members) == [1, 1], "each stuck member to own a partition")

    def close_members() -> None:
        for member in members:
            member.close()

    collect_then_roll_up(config, CYCLES, cleanup=[close_members])

    newest = {
        group: rest
        for group, *rest in lake_rows(
            config,
            "select group_id, status, rule, reason, members, group_state, group_type from group_status "
            "where group_id in (?, ?) qualify row_number() over (partition by group_id order by updated_at desc) = 1",
            [stuck, gone],
        )
    }
    assert set(newest) == {stuck, gone}, f"a group_status row for each group: {newest}"
    status, rule, reason, members_count, state, group_type = newest[stuck]
    assert (status, rule, members_count, state, group_type) == ("STALL", "stall_owned", 2, "Stable", protocol)
    assert "while stuck-" in reason and " owns it, lag 900" in reason, reason
    status, rule, reason, members_count, state, group_type = newest[gone]
    assert (status, rule, members_count, state, group_type) == ("STOP", "stop_empty", 0, "Empty", protocol)
    assert "no commit since (committed offset 400, lag 600)" in reason, reason

    owners = lake_rows(
        config,
        "select partition, owner_client_id, group_type from lag_1m where group_id = ? "
        "qualify row_number() over (partition by partition order by window_start desc) = 1 order by partition",
        [stuck],
    )
    assert [row[2] for row in owners] == [protocol, protocol]
    assert {row[1] for row in owners} == {"stuck-0", "stuck-1"}
