"""The admin collector on consumer-protocol (KIP-848) groups: real members on the real broker.

On Kafka 4 the members join with `group.protocol=consumer`; on 3.x (no KIP-848) with the classic
protocol, so the same lines hold for classic groups there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, MemberAssignment, MemberDescription

from collectors.admin.collector import AdminCollector
from collectors.admin.samples import described_state_code
from collectors.base import SampleFactory
from harness.kafka_workload import KafkaWorkload
from harness.processes import run_lagwatch
from harness.samples_topic import read_samples
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE
from tests.collectors.group_members import GroupMember, wait_for


def member_protocol(broker: Any) -> str:
    return "consumer" if broker.version >= (4, 0, 0) else "classic"


def test_collect_once_reports_the_two_members_of_a_kip848_group(
    broker: Any, kafka: KafkaWorkload, unique: Callable[[str], str], tmp_path: Path
):
    topic, group, samples_topic = unique("topic"), unique("k848once"), unique("samples")
    protocol = member_protocol(broker)
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 100, 1: 100})
    kafka.commit(group, topic, {0: 10, 1: 10})  # a classic client's commit first: the group is converted
    members = [GroupMember(broker.bootstrap_servers, group, topic, f"once-{i}", None, protocol) for i in range(2)]
    try:
        wait_for(lambda: sorted(len(m.assigned) for m in members) == [1, 1], "each member to own a partition")
        config = tmp_path / "c.toml"
        config.write_text(
            f'[cluster]\nbootstrap_servers = "{broker.bootstrap_servers}"\n'
            f'[transport]\nsamples_topic = "{samples_topic}"\n'
            f'[collect]\ninterval_s = 5\ntimeout_s = 4\ngroups_allow = ["^{group}$"]\n'
        )
        proc = run_lagwatch(config, "collect", "--once")
        assert proc.returncode == 0, proc.stderr
    finally:
        for member in members:
            member.close()
    samples = [s for s in read_samples(broker.bootstrap_servers, samples_topic, 10) if s["group_id"] == group]
    gauges = {s["metric"]: s["value"] for s in samples if s["topic"] is None}
    assert gauges["consumer_group_members"] == 2
    assert gauges["consumer_group_type"] == GROUP_TYPE_CODE[protocol]
    assert gauges["consumer_group_state"] == GROUP_STATE_CODE["Stable"]
    owners = {(s["partition"], s["client_id"], s["member_id"]) for s in samples if s["metric"] == "partition_assigned"}
    assert {client for _, client, _ in owners} == {"once-0", "once-1"} and len(owners) == 2
    assert {partition for partition, _, _ in owners} == {0, 1}
    lag = {s["partition"]: s["value"] for s in samples if s["metric"] == "consumer_lag"}
    assert lag == {0: 90, 1: 90}


def test_a_joining_kip848_member_reads_as_assigning_or_reconciling_never_unknown(
    broker: Any, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    """confluent-kafka says UNKNOWN while a consumer group assigns or reconciles; the collector
    names the state from the members' assignments and target assignments instead."""
    topic, group = unique("topic"), unique("k848join")
    protocol = member_protocol(broker)
    kafka.create_topic(topic, 4)
    first = GroupMember(broker.bootstrap_servers, group, topic, "join-0", None, protocol)
    members = [first]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    seen: list[tuple[ConsumerGroupState, int | None]] = []
    try:
        wait_for(lambda: first.assigned == {0, 1, 2, 3}, "the first member to own every partition")
        members.append(GroupMember(broker.bootstrap_servers, group, topic, "join-1", None, protocol))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            description = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
            seen.append((description.state, described_state_code(description)))
            if description.state == ConsumerGroupState.STABLE and all(m.assigned for m in members):
                break
            time.sleep(0.05)
    finally:
        for member in members:
            member.close()
    assert seen[-1] == (ConsumerGroupState.STABLE, GROUP_STATE_CODE["Stable"])
    codes = {code for _, code in seen}
    assert None not in codes and GROUP_STATE_CODE["Unknown"] not in codes
    if protocol == "consumer":  # the rebalance of a KIP-848 group, as the collector names it
        unknown = {code for state, code in seen if state == ConsumerGroupState.UNKNOWN}
        assert unknown and unknown <= {GROUP_STATE_CODE["Assigning"], GROUP_STATE_CODE["Reconciling"]}


def _member(owned: list[int], target: list[int] | None) -> MemberDescription:
    def assignment(partitions: list[int]) -> MemberAssignment:
        return MemberAssignment([TopicPartition("t", p) for p in partitions])

    return MemberDescription("m", "c", "/h", assignment(owned), None, None if target is None else assignment(target))


def _description(state: ConsumerGroupState, group_type: ConsumerGroupType, members: list[MemberDescription]):
    return ConsumerGroupDescription("g", False, members, "uniform", state, None, None, group_type)


def test_unknown_state_is_told_from_the_members_only_when_the_answer_carries_them():
    unknown, consumer = ConsumerGroupState.UNKNOWN, ConsumerGroupType.CONSUMER
    reconciling = _description(unknown, consumer, [_member([0, 1], [0]), _member([], [1])])
    assigning = _description(unknown, consumer, [_member([0, 1], [0, 1]), _member([], [])])
    assert described_state_code(reconciling) == GROUP_STATE_CODE["Reconciling"]
    assert described_state_code(assigning) == GROUP_STATE_CODE["Assigning"]
    # tansu's answer: no type, no members: no evidence, as before.
    assert described_state_code(_description(unknown, ConsumerGroupType.UNKNOWN, [])) is None
    assert described_state_code(_description(unknown, consumer, [])) is None
    stable = _description(ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC, [_member([0], None)])
    assert described_state_code(stable) == GROUP_STATE_CODE["Stable"]


def test_a_group_migrating_between_protocols_keeps_its_offsets_and_is_described_throughout(
    broker: Any, kafka: KafkaWorkload, unique: Callable[[str], str], make_config: Callable[..., Any]
):
    """Classic members, then a KIP-848 member joins (Kafka 4 converts the group), then it leaves
    (converted back): every cycle has the group's lag, members and type."""
    if broker.version < (4, 0, 0):
        pytest.skip("KIP-848 members need Kafka 4")
    topic, group = unique("topic"), unique("k848mig")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 100, 1: 100})
    collector = AdminCollector(make_config(collect={"groups_allow": [f"^{group}$"], "timeout_s": 4}))
    make = SampleFactory(cluster="test", collector="test")

    def cycle() -> dict[str, Any]:
        result = collector.collect(int(time.time() * 1000), make)
        assert result.ok, result.errors
        mine = [s for s in result.samples if s.group_id == group]
        return {
            "lag": {s.partition: s.value for s in mine if s.metric == "consumer_lag"},
            "members": next((s.value for s in mine if s.metric == "consumer_group_members"), None),
            "type": next((s.value for s in mine if s.metric == "consumer_group_type"), None),
        }

    classic = GroupMember(broker.bootstrap_servers, group, topic, "mig-classic", 10)
    kip848: GroupMember | None = None
    try:
        wait_for(lambda: classic.committed == {0, 1}, "the classic member to commit")
        first = cycle()
        kip848 = GroupMember(broker.bootstrap_servers, group, topic, "mig-848", None, "consumer")
        wait_for(lambda: bool(kip848.assigned), "the KIP-848 member to own a partition")
        wait_for(lambda: cycle()["type"] == GROUP_TYPE_CODE["consumer"], "the group converted to consumer")
        mixed = cycle()
        kip848.close()
        wait_for(lambda: cycle()["type"] == GROUP_TYPE_CODE["classic"], "the group converted back to classic")
        back = cycle()
    finally:
        classic.close()
        if kip848 is not None:
            kip848.close()
        collector.close()
    assert first == {"lag": {0: 90, 1: 90}, "members": 1, "type": GROUP_TYPE_CODE["classic"]}
    assert mixed == {"lag": {0: 90, 1: 90}, "members": 2, "type": GROUP_TYPE_CODE["consumer"]}
    assert back["lag"] == {0: 90, 1: 90} and back["type"] == GROUP_TYPE_CODE["classic"]
