"""Epochs and partitions assigned but not yet reconciled, for consumer (KIP-848) groups, on the real broker.

A second KIP-848 member joining a group makes the coordinator bump the group epoch and give it a
partition the first member still owns: that partition is pending (in the joiner's target
assignment, not yet in its current one) until the first member revokes it. The commit log says
so record by record (published as `partition_pending`, `consumer_group_epoch`,
`consumer_group_member_epoch`), DescribeGroups says it through each member's target assignment.
Classic groups (the only kind on Kafka 3.x) have neither: no such samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from bench.commit_log_soak import Member
from collectors.admin.collector import AdminCollector
from collectors.admin.samples import NameFilter, partition_pending_samples
from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config
from tests.collectors.commit_log.test_commit_log import MAKE

EPOCH_METRICS = {"consumer_group_epoch", "consumer_group_member_epoch", "partition_pending"}


def protocols(broker: RealKafkaBroker) -> list[str]:
    return ["classic", "consumer"] if broker.version >= (4, 0, 0) else ["classic"]


class Published:
    """The collector's samples of one group, from its cycles and between them (the log's changes)."""

    def __init__(self, collector: AdminCollector, group: str) -> None:
        self.collector, self.group, self.samples = collector, group, []

    def read(self, cycle: bool = True) -> list[Any]:
        now = int(time.time() * 1000)
        found = self.collector.collect(now, MAKE).samples if cycle else self.collector.events(MAKE)
        self.samples.extend(s for s in found if s.group_id == self.group)
        return self.samples

    def owners(self) -> dict[int, str]:
        """The newest commit-log change's owners (partition -> client id)."""
        logged = [s for s in self.samples if s.source == "commitlog" and s.metric != "committed_offset"]
        newest = max((s.ts for s in logged), default=-1)
        return {s.partition: s.client_id for s in logged if s.ts == newest and s.metric == "partition_assigned"}


def pending_seen(published: Published) -> bool:
    return any(s.metric == "partition_pending" for s in published.samples)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_joining_member_is_pending_then_owns_and_the_epochs_follow(
    make_config: Callable[..., Config], broker: RealKafkaBroker, kafka: KafkaWorkload,
    unique: Callable[[str], str], protocol: str,
):  # fmt: skip
    if protocol not in protocols(broker):
        pytest.skip(f"Kafka {broker.version_text} has no {protocol} groups")
    topic, group = unique("topic"), unique(f"epochs-{protocol}")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 20, 1: 20})
    kafka.commit(group, topic, {0: 1})
    config = make_config(collect={"commit_log": "on", "interval_s": 5, "timeout_s": 5, "groups_allow": [f"^{group}$"]})
    collector = AdminCollector(config)
    members: list[Member] = []
    published = Published(collector, group)
    try:
        published.read()
        members.append(Member(broker.bootstrap_servers, group, protocol, "ka", topic))
        wait_until(lambda: published.read() and published.owners() == {0: "ka", 1: "ka"}, 60, "ka owns both")
        # ka stops polling before kb joins, so it cannot give up a partition yet: under load the
        # pending phase would otherwise start and end between two reads of the log.
        members[0].polling.clear()
        members.append(Member(broker.bootstrap_servers, group, protocol, "kb", topic))
        if protocol == "consumer":
            wait_until(lambda: published.read(False) and pending_seen(published), 60, "kb's partition pending")
        members[0].polling.set()
        wait_until(lambda: published.read(False) and sorted(published.owners().values()) == ["ka", "kb"], 60,
                   "ka and kb own one each")  # fmt: skip
    finally:
        for member in members:
            member.close()
        collector.close()
    logged = [s for s in published.samples if s.source == "commitlog" and s.metric != "committed_offset"]
    if protocol == "classic":  # no epochs, no target assignment: nothing new
        assert not [s for s in published.samples if s.metric in EPOCH_METRICS]
        return
    epochs = [s.value for s in logged if s.metric == "consumer_group_epoch"]
    assert epochs == sorted(epochs) and epochs[-1] > epochs[0] >= 1  # kb's join bumped it
    kb_partition = next(p for p, client in published.owners().items() if client == "kb")
    pending = [s for s in logged if s.metric == "partition_pending"]
    assert pending and {(s.partition, s.client_id) for s in pending} == {(kb_partition, "kb")}
    assert all(s.member_id and s.host for s in pending)
    kb_owns_at = min(s.ts for s in logged if s.metric == "partition_assigned" and s.client_id == "kb")
    assert max(s.ts for s in pending) < kb_owns_at  # pending first, then owned: no longer pending
    newest = max(s.ts for s in logged)
    member_epochs = {
        s.client_id: s.value for s in logged if s.ts == newest and s.metric == "consumer_group_member_epoch"
    }
    assert member_epochs == {"ka": epochs[-1], "kb": epochs[-1]}  # both reconciled to the group epoch


def test_describe_names_the_pending_partition_while_the_group_reconciles(
    broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    if broker.version < (4, 0, 0):
        pytest.skip("target assignments are KIP-848's (Kafka 4)")
    topic, group = unique("topic"), unique("k848pending")
    kafka.create_topic(topic, 2)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    members = [Member(broker.bootstrap_servers, group, "consumer", "ka", topic)]
    allowed = NameFilter([".*"], [])
    seen: list[set[tuple[int, str]]] = []
    try:
        wait_until(lambda: _owned(admin, group) == {0: "ka", 1: "ka"}, 60, "ka owns both")
        members.append(Member(broker.bootstrap_servers, group, "consumer", "kb", topic))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            description = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
            pending = partition_pending_samples(group, description, allowed, 0, MAKE)
            seen.append({(s.partition, s.client_id) for s in pending})
            owned = {tp.partition for m in description.members for tp in m.assignment.topic_partitions}
            assert not {p for p, _ in seen[-1]} & {
                tp.partition for m in description.members if m.client_id == "kb"
                for tp in m.assignment.topic_partitions
            }  # a member's pending partition is not one it owns  # fmt: skip
            if len(description.members) == 2 and owned == {0, 1} and not seen[-1] and any(seen):
                break
            time.sleep(0.05)
    finally:
        for member in members:
            member.close()
    moved = set().union(*seen)
    assert len(moved) == 1 and next(iter(moved))[1] == "kb"  # kb's partition, pending until ka revoked it
    assert seen[-1] == set()  # reconciled: nothing pending


def _owned(admin: AdminClient, group: str) -> dict[int, str]:
    description = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    return {tp.partition: m.client_id for m in description.members for tp in m.assignment.topic_partitions}
