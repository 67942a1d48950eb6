"""Membership from the commit log on a real broker: members joining and leaving classic groups
(Kafka 3.8 and 4.3) and KIP-848 groups (4.x) are read as changes seconds after they happen, with
their owners; share-group records are skipped and counted; the admin collector publishes them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from bench.commit_log_soak import Member
from collectors.admin.collector import AdminCollector
from collectors.commit_log.groups import GroupChange
from collectors.commit_log.reader import CommitLogReader
from collectors.commit_log.topics import TopicIdNamer
from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config
from tests.collectors.commit_log.test_commit_log import MAKE, started_reader


@pytest.fixture
def reader(broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]) -> Iterator[CommitLogReader]:
    kafka.commit(unique("warm-up"), kafka_topic(kafka, unique), {0: 1})  # the log exists
    started = started_reader(broker.bootstrap_servers)
    yield started
    started.close()


def kafka_topic(kafka: KafkaWorkload, unique: Callable[[str], str]) -> str:
    topic = unique("topic")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 20, 1: 20})
    return topic


def protocols(broker: RealKafkaBroker) -> list[str]:
    return ["classic", "consumer"] if broker.version >= (4, 0, 0) else ["classic"]


def collect_changes(reader: CommitLogReader, group: str, into: list[GroupChange]) -> Callable[[], list[GroupChange]]:
    def read() -> list[GroupChange]:
        into.extend(c for c in reader.drain_changes() if c.group_id == group)
        return into

    return read


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_members_joining_and_leaving_are_read_as_they_happen(
    broker: RealKafkaBroker, reader: CommitLogReader, kafka: KafkaWorkload, unique: Callable[[str], str],
    protocol: str,
):  # fmt: skip
    if protocol not in protocols(broker):
        pytest.skip(f"Kafka {broker.version_text} has no {protocol} groups")
    topic, group = kafka_topic(kafka, unique), unique(protocol)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    namer = TopicIdNamer()
    changes: list[GroupChange] = []
    read = collect_changes(reader, group, changes)

    def named() -> list[GroupChange]:
        namer.name_unknown(admin, reader, [topic], 10)  # KIP-848 records name topics by id
        return read()

    first = Member(broker.bootstrap_servers, group, protocol, "first", topic)
    wait_until(lambda: any(c.state == "Stable" and len(c.owners) == 2 for c in named()), 60, "one member owns both")
    second = Member(broker.bootstrap_servers, group, protocol, "second", topic)
    wait_until(lambda: any(c.members == 2 and c.state == "Stable" and {o[3] for o in c.owners} == {"first", "second"}
                           for c in named()), 60, "two members share the partitions")  # fmt: skip
    first.close()
    wait_until(lambda: named()[-1].members == 1 and changes[-1].state == "Stable", 60, "the first left")
    left_at = second.close()
    wait_until(lambda: named()[-1].state == "Empty", 30, "the group is Empty")
    read_after_s = time.time() - left_at
    assert changes[-1] == GroupChange(
        group, changes[-1].ts, "Empty", 0, (), protocol, changes[-1].epoch, rebalances=changes[-1].rebalances
    )
    assert changes[-1].rebalances is not None and changes[-1].rebalances > changes[0].rebalances
    epoch = changes[-1].epoch
    assert epoch is None if protocol == "classic" else epoch > 1  # every join and leave bumps it
    assert changes[-1].ts >= int(left_at * 1000) - 5_000  # stamped with the record's time, the leave
    assert read_after_s < 5  # read as it happened, not a collector interval later
    assert {c.protocol for c in changes} == {protocol}
    assert reader.decode_errors == 0


def test_share_group_records_are_skipped_and_counted(
    broker: RealKafkaBroker, reader: CommitLogReader, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    if broker.version < (4, 1, 0):
        pytest.skip("share groups are Kafka 4.1+")
    from confluent_kafka import ShareConsumer

    topic, group = kafka_topic(kafka, unique), unique("share")
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})  # fmt: skip
    consumer.subscribe([topic])
    try:
        wait_until(lambda: consumer.poll(0.5) is not None and reader.skipped["ShareGroupMemberMetadata"] > 0, 60,
                   "the share member's records are read")  # fmt: skip
    finally:
        consumer.close()
    assert reader.skipped["ShareGroupMetadata"] > 0
    assert reader.decode_errors == 0 and reader.failure is None


def test_admin_collector_publishes_log_membership_between_cycles(
    make_config: Callable[..., Config], broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group = kafka_topic(kafka, unique), unique("published")
    kafka.commit(group, topic, {0: 1})
    collector = AdminCollector(make_config(collect={"commit_log": "on", "interval_s": 5, "timeout_s": 5}))
    try:
        assert collector.collect(int(time.time() * 1000), MAKE).ok
        member = Member(broker.bootstrap_servers, group, protocols(broker)[-1], "pub", topic)
        samples: list[Any] = []

        def published(cycle: bool) -> list[Any]:
            """Between cycles (events), or in a cycle (which also names the topic ids the log met)."""
            found = collector.collect(int(time.time() * 1000), MAKE).samples if cycle else collector.events(MAKE)
            samples.extend(s for s in found if s.group_id == group and s.source == "commitlog"
                           and s.metric != "committed_offset")  # fmt: skip
            return samples

        wait_until(lambda: any(s.metric == "partition_assigned" for s in published(True)), 60, "owners published")
        member.close()
        wait_until(lambda: published(False)[-1].metric == "consumer_group_members" and samples[-1].value == 0, 30,
                   "Empty is published between cycles")  # fmt: skip
        assert samples[-3].metric == "consumer_group_state" and samples[-3].value == 1  # Empty
        assert samples[-2].metric == "consumer_group_type" and samples[-2].value in (1, 2)  # classic or consumer
        skipped = [s for s in collector.collect(int(time.time() * 1000), MAKE).samples
                   if s.metric == "commit_log_records_skipped_total"]  # fmt: skip
        assert skipped and skipped[0].client_id is None
    finally:
        collector.close()
