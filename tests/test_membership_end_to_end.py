"""Membership end to end: real consumers in a group on the real broker → the admin collector →
the samples topic → the Spark job (`lagwatch stream --available-now`) → the lake, read by DuckDB.

Two cycles with two members in one minute, then one member leaves and two cycles in the next
minute: lag_1m names each partition's owner per minute (member id, client id, host as the
broker reports them) and counts the moves; group_status has the state, members and the rebalance.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pytest

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic
from lagwatch.samples import Sample
from spark_jobs import job
from tests.collectors.group_members import GroupMember, wait_for
from tests.spark_jobs.lake_workload import lake_rows
from tests.spark_jobs.samples_io import produce_samples

MAKE = SampleFactory(cluster="test", collector="test-instance")
PARTITIONS = range(4)


def cycles(config: Config, group: str, start_ms: int, members: int) -> list[Sample]:
    """Two collector cycles 15 s apart, once the group is Stable with `members` members."""
    collector = AdminCollector(config)
    try:

        def settled() -> bool:
            result = collector.collect(start_ms, MAKE)
            counts = [s.value for s in result.samples if s.metric == "consumer_group_members"]
            states = [s.value for s in result.samples if s.metric == "consumer_group_state"]
            return counts == [members] and states == [2.0]  # Stable

        wait_for(settled, f"{group} Stable with {members} member(s)")
        first, second = (collector.collect(ts, MAKE) for ts in (start_ms, start_ms + 15_000))
    finally:
        collector.close()
    assert first.ok and second.ok, (first.errors, second.errors)
    return [*first.samples, *second.samples]


@pytest.mark.slow
def test_owners_members_and_the_rebalance_reach_the_lake(
    spark: Any, broker: Any, kafka: KafkaWorkload, make_config: Callable[..., Config], unique: Callable[[str], str]
) -> None:
    topic, group = unique("e2e-owned"), unique("e2e-owners")
    kafka.create_topic(topic, len(PARTITIONS))
    kafka.produce(topic, dict.fromkeys(PARTITIONS, 50))
    config = make_config(collect={"groups_allow": [f"^{group}$"], "topics_allow": [f"^{topic}$"]})
    ensure_topic({"bootstrap.servers": broker.bootstrap_servers}, config.transport.samples_topic, 1)
    minute = (int(time.time() * 1000) // 60_000 - 3) * 60_000
    first = GroupMember(broker.bootstrap_servers, group, topic, "owner-a", commit_offset=10)
    second = GroupMember(broker.bootstrap_servers, group, topic, "owner-b", commit_offset=10)
    try:
        wait_for(lambda: len(first.assigned) == 2 and len(second.assigned) == 2, "both members to own 2 partitions")
        before = {p: (first if p in first.assigned else second) for p in PARTITIONS}
        samples = cycles(config, group, minute, members=2)
        second.close()
        wait_for(lambda: first.assigned == set(PARTITIONS), "the remaining member to own every partition")
        samples += cycles(config, group, minute + 60_000, members=1)
    finally:
        second.close()
        first.close()
    produce_samples(broker.bootstrap_servers, config.transport.samples_topic, samples)

    assert job.run(config, argparse.Namespace(available_now=True)) == 0

    owners = lake_rows(
        config,
        "SELECT epoch_ms(window_start), partition, owner_member_id, owner_client_id, owner_host, owner_changes, lag "
        "FROM lag_1m WHERE group_id = $group ORDER BY 1, 2",
        {"group": group},
    )
    host = owners[0][4]
    assert host.lstrip("/") == "127.0.0.1"
    moved = {p for p in PARTITIONS if before[p] is second}
    assert owners == [
        *[(minute, p, before[p].member_id, before[p].client_id, host, 0, 40) for p in PARTITIONS],
        *[(minute + 60_000, p, first.member_id, "owner-a", host, int(p in moved), 40) for p in PARTITIONS],
    ]
    assert len(moved) == 2
    status = lake_rows(
        config,
        "SELECT epoch_ms(window_start), group_state, members, rebalances FROM group_status "
        "WHERE group_id = $group ORDER BY 1",
        {"group": group},
    )
    # One batch held both minutes: a group's status row is written for its newest window only.
    assert status == [(minute + 60_000, "Stable", 1, 1)], "the member that left and the rebalance it caused"
