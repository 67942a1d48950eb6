"""Admin collector against the real Kafka broker: offsets, lag, groups, members, retention, filters, failure.

Records are produced with ordinary batching (the `kafka` fixture), as any producer does: the
lag asserted here is exact on real Kafka, with no single-record batches anywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from collectors.admin.collector import AdminCollector
from collectors.admin.samples import GROUP_STATE_CODES
from collectors.base import SampleFactory, ScrapeResult
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config, parse_config
from lagwatch.vocabulary import Source
from shell.broker import free_port
from tests.collectors.group_members import GroupMember, wait_for

MAKE = SampleFactory(cluster="test", collector="test-instance")
PRODUCED = {0: 334, 1: 333, 2: 333}


RETENTION_BATCHES, RETENTION_BATCH = 6, 30


def retention_topic_config(broker: RealKafkaBroker) -> dict[str, str]:
    """Retention test topic: 1 KB segments that expire one second after their newest record. A
    30-record batch is ≈ 530 bytes, so each batch gets a segment of its own (a batch larger than
    the segment size would be refused)."""
    return {broker.segment_bytes_config: "1024", "retention.ms": "1000"}


def collect_once(config: Config) -> ScrapeResult:
    collector = AdminCollector(config)
    try:
        return collector.collect(1_700_000_000_000, MAKE)
    finally:
        collector.close()


def values(result: ScrapeResult, metric: str, **labels: Any) -> dict[tuple[Any, ...], float]:
    """metric's samples keyed by (group_id, topic, partition), restricted to the given labels."""
    return {
        (s.group_id, s.topic, s.partition): s.value
        for s in result.samples
        if s.metric == metric and all(getattr(s, k) == v for k, v in labels.items())
    }


def consume_and_commit(bootstrap: str, group_id: str, topic: str, count: int) -> tuple[Consumer, dict[int, int]]:
    """A real group member consumes exactly `count` records, commits them, and stays in the group."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    next_offsets: dict[int, int] = {}
    consumed = 0
    give_up = time.monotonic() + 60  # a bound on the wait, not a timed assertion
    while consumed < count:
        assert time.monotonic() < give_up, f"consumed only {consumed} of {count} records"
        for message in consumer.consume(num_messages=count - consumed, timeout=1.0):
            assert message.error() is None, message.error()
            next_offsets[message.partition()] = message.offset() + 1
            consumed += 1
    # Every assigned partition gets a commit: one the consumer has not read from yet commits 0.
    committed = {tp.partition: next_offsets.get(tp.partition, 0) for tp in consumer.assignment()}
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in committed.items()], asynchronous=False)
    return consumer, committed


@pytest.mark.slow
def test_lag_per_partition_is_exact_and_sums_to_600(
    make_config: Callable[..., Config], kafka: KafkaWorkload, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    topic, group = unique("lag-topic"), unique("lag-group")
    kafka.create_topic(topic, 3)
    kafka.produce(topic, PRODUCED)
    consumer, committed = consume_and_commit(broker.bootstrap_servers, group, topic, 400)
    try:
        result = collect_once(make_config())
    finally:
        consumer.close()

    assert result.ok, result.errors
    assert sum(committed.values()) == 400
    ends = values(result, "log_end_offset", topic=topic)
    assert ends == {(None, topic, p): float(n) for p, n in PRODUCED.items()}
    lags = values(result, "consumer_lag", group_id=group)
    assert lags == {(group, topic, p): float(PRODUCED[p] - committed[p]) for p in PRODUCED}
    assert sum(lags.values()) == 600
    assert values(result, "committed_offset", group_id=group) == {
        (group, topic, p): float(o) for p, o in committed.items()
    }


def test_empty_group_is_reported_with_exact_lag_and_state(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic, group = unique("empty-topic"), unique("empty-group")
    kafka.create_topic(topic, 3)
    kafka.produce(topic, {0: 10, 1: 20, 2: 30})
    kafka.commit(group, topic, {0: 4, 1: 20, 2: 1})  # committed without ever joining: no members

    result = collect_once(make_config())

    assert result.ok, result.errors
    assert values(result, "consumer_lag", group_id=group) == {
        (group, topic, 0): 6.0,
        (group, topic, 1): 0.0,
        (group, topic, 2): 29.0,
    }
    assert values(result, "committed_offset", group_id=group) == {
        (group, topic, 0): 4.0,
        (group, topic, 1): 20.0,
        (group, topic, 2): 1.0,
    }
    states = values(result, "consumer_group_state", group_id=group)
    assert set(states.values()) <= set(GROUP_STATE_CODES.values()) and len(states) == 1


def test_groups_and_topics_denied_by_regex_are_not_reported(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic, hidden_topic = unique("seen-topic"), unique("hidden-topic")
    kept, denied = unique("kept-group"), unique("denied-group")
    for name in (topic, hidden_topic):
        kafka.create_topic(name, 2)
        kafka.produce(name, {0: 5, 1: 5})
    kafka.commit(kept, topic, {0: 2, 1: 3})
    kafka.commit(kept, hidden_topic, {0: 1})
    kafka.commit(denied, topic, {0: 1, 1: 1})

    result = collect_once(make_config(collect={"groups_deny": [f"^{denied}$"], "topics_deny": ["^__", "^hidden-"]}))

    assert result.ok, result.errors
    reported_groups = {s.group_id for s in result.samples if s.group_id}
    reported_topics = {s.topic for s in result.samples if s.topic}
    assert kept in reported_groups and denied not in reported_groups
    assert topic in reported_topics and hidden_topic not in reported_topics
    assert values(result, "consumer_lag", group_id=kept) == {(kept, topic, 0): 3.0, (kept, topic, 1): 2.0}


def test_committed_offset_beyond_the_log_end_is_a_data_quality_event(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic, group = unique("rewound-topic"), unique("ahead-group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 5, 1: 5})
    kafka.commit(group, topic, {0: 50, 1: 2})

    result = collect_once(make_config())

    assert values(result, "consumer_lag", group_id=group) == {(group, topic, 1): 3.0}
    assert values(result, "consumer_lag_negative", group_id=group) == {(group, topic, 0): 1.0}
    assert values(result, "committed_offset", group_id=group)[(group, topic, 0)] == 50.0


def test_cluster_metadata_counts_partitions_and_leaders(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic = unique("meta-topic")
    kafka.create_topic(topic, 4)

    result = collect_once(make_config())

    assert result.ok, result.errors
    by_metric: dict[str, list[Any]] = {}
    for s in result.samples:
        by_metric.setdefault(s.metric, []).append(s)
    assert [s.value for s in by_metric["broker_count"]] == [1.0]
    assert len(by_metric["controller_id"]) == 1
    assert values(result, "topic_partitions", topic=topic) == {(None, topic, None): 4.0}
    per_broker = {s.broker: s.value for s in by_metric["partition_count"]}
    leaders = {s.broker: s.value for s in by_metric["leader_count"]}
    total_partitions = sum(s.value for s in by_metric["topic_partitions"])
    assert len(per_broker) == 1 and next(iter(per_broker.values())) >= total_partitions >= 4
    assert leaders == per_broker  # one broker: it leads every partition it holds
    cluster_wide = [s.value for s in by_metric["under_replicated_partitions"] if s.topic is None]
    assert cluster_wide == [0.0] and [s.value for s in by_metric["offline_partitions"]] == [0.0]


@pytest.mark.timeout(60)
def test_unreachable_cluster_fails_the_scrape_without_raising() -> None:
    closed = f"127.0.0.1:{free_port()}"  # nothing listens there
    config = parse_config(
        {"cluster": {"name": "gone", "bootstrap_servers": closed}, "collect": {"interval_s": 2, "timeout_s": 1}},
        environ={},
    )

    result = collect_once(config)

    assert not result.ok
    assert result.samples == []
    assert len(result.errors) == 1 and closed in result.errors[0]


def test_bad_client_setting_fails_the_scrape_with_the_property_named(make_config: Callable[..., Config]) -> None:
    config = make_config(cluster={"client": {"no.such.property": "1"}})

    result = collect_once(config)

    assert not result.ok
    assert len(result.errors) == 1 and "no.such.property" in result.errors[0]


def test_describe_groups_off_sends_no_member_counts_but_keeps_the_lag(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic, group = unique("quiet-topic"), unique("quiet-group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 8})
    kafka.commit(group, topic, {0: 3})

    result = collect_once(make_config(collect={"describe_groups": False}))

    assert result.ok, result.errors
    assert values(result, "consumer_lag", group_id=group) == {(group, topic, 0): 5.0}
    # No DescribeGroups answers: no member counts from the admin source (the commit log, when it
    # is read, still publishes the membership changes it records, at no extra request).
    assert values(result, "consumer_group_members", source=Source.ADMIN) == {}


def earliest_offset(admin: AdminClient, topic: str, partition: int) -> int:
    """What the broker itself reports as the log start (ListOffsets earliest)."""
    tp = TopicPartition(topic, partition)
    return int(admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(10).offset)


def test_log_start_offset_is_what_the_broker_reports_after_retention_deleted_segments(
    make_config: Callable[..., Config], kafka: KafkaWorkload, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    topic = unique("retention-topic")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config=retention_topic_config(broker))])[topic].result(10)
    for _ in range(RETENTION_BATCHES):  # one flush per batch: several segments
        kafka.produce(topic, {0: RETENTION_BATCH})
    produced = RETENTION_BATCHES * RETENTION_BATCH
    wait_for(lambda: earliest_offset(admin, topic, 0) == produced, "retention deleted every expired segment")
    # Keep what comes next: the log start stays put while the end moves on.
    keep = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    admin.incremental_alter_configs([keep])[keep].result(10)
    kafka.produce(topic, {0: 7})

    result = collect_once(make_config())

    assert result.ok, result.errors
    broker_says = earliest_offset(admin, topic, 0)
    assert values(result, "log_start_offset", topic=topic) == {(None, topic, 0): float(broker_says)}
    assert broker_says == produced > 0
    assert values(result, "log_end_offset", topic=topic) == {(None, topic, 0): float(produced + 7)}
    kinds = {s.kind for s in result.samples if s.metric == "log_start_offset"}
    assert kinds == {"gauge"}


def test_log_start_offset_is_zero_where_nothing_was_deleted(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic = unique("kept-topic")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 12, 1: 0})

    result = collect_once(make_config())

    assert values(result, "log_start_offset", topic=topic) == {(None, topic, 0): 0.0, (None, topic, 1): 0.0}


def test_a_deleted_group_is_no_longer_reported(
    make_config: Callable[..., Config], kafka: KafkaWorkload, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    topic, gone, kept = unique("groups-topic"), unique("gone-group"), unique("kept-group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 9})
    kafka.commit(gone, topic, {0: 2})
    kafka.commit(kept, topic, {0: 5})
    config = make_config()
    collector = AdminCollector(config)
    try:
        before = collector.collect(1_700_000_000_000, MAKE)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.delete_consumer_groups([gone])[gone].result(10)
        after = collector.collect(1_700_000_060_000, MAKE)
    finally:
        collector.close()

    assert values(before, "consumer_lag", group_id=gone) == {(gone, topic, 0): 7.0}
    assert after.ok and after.errors == []
    assert [s for s in after.samples if s.group_id == gone] == []
    assert values(after, "consumer_lag", group_id=kept) == {(kept, topic, 0): 4.0}


def test_partitions_added_to_a_topic_are_read_in_the_next_cycle_with_exact_lag(
    make_config: Callable[..., Config], kafka: KafkaWorkload, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    topic, group = unique("growing-topic"), unique("growing-group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 10, 1: 10})
    kafka.commit(group, topic, {0: 4, 1: 10})
    collector = AdminCollector(make_config())  # one collector, one kept AdminClient across both cycles
    try:
        before = collector.collect(1_700_000_000_000, MAKE)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_partitions([NewPartitions(topic, 4)])[topic].result(10)
        wait_for(lambda: len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 4, "4 partitions")
        kafka.produce(topic, {2: 30, 3: 40})
        kafka.commit(group, topic, {2: 25})  # partition 3: not consumed yet
        after = collector.collect(1_700_000_060_000, MAKE)
    finally:
        collector.close()

    assert set(values(before, "log_end_offset", topic=topic)) == {(None, topic, 0), (None, topic, 1)}
    assert after.ok and after.errors == []
    assert values(after, "log_end_offset", topic=topic) == {
        (None, topic, 0): 10.0, (None, topic, 1): 10.0, (None, topic, 2): 30.0, (None, topic, 3): 40.0,
    }  # fmt: skip
    assert values(after, "topic_partitions", topic=topic) == {(None, topic, None): 4.0}
    assert values(after, "consumer_lag", group_id=group) == {
        (group, topic, 0): 6.0, (group, topic, 1): 0.0, (group, topic, 2): 5.0,
    }  # fmt: skip


def test_a_topic_deleted_under_a_group_leaves_the_groups_other_topics_exact(
    make_config: Callable[..., Config], kafka: KafkaWorkload, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    deleted, remaining, group = unique("deleted-topic"), unique("remaining-topic"), unique("orphan-group")
    kafka.create_topic(deleted, 2)
    kafka.create_topic(remaining, 1)
    kafka.produce(deleted, {0: 5, 1: 5})
    kafka.produce(remaining, {0: 8})
    kafka.commit(group, deleted, {0: 1, 1: 2})
    kafka.commit(group, remaining, {0: 3})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.delete_topics([deleted])[deleted].result(10)
    wait_for(lambda: deleted not in admin.list_topics(timeout=10).topics, f"{deleted} gone from the metadata")

    result = collect_once(make_config())

    assert result.ok and result.errors == []
    assert [s for s in result.samples if s.topic == deleted] == []
    assert values(result, "consumer_lag", group_id=group) == {(group, remaining, 0): 5.0}
    assert values(result, "committed_offset", group_id=group) == {(group, remaining, 0): 3.0}


def owners(result: ScrapeResult, group: str) -> dict[int, tuple[str | None, str | None, str | None]]:
    """partition -> (member_id, client_id, host) from the cycle's DescribeGroups partition_assigned
    samples (the commit log's, when it is read, are its own series)."""
    found: dict[int, tuple[str | None, str | None, str | None]] = {}
    for s in result.samples:
        if s.metric == "partition_assigned" and s.group_id == group and s.source == Source.ADMIN:
            assert s.value == 1.0 and s.partition not in found
            found[s.partition] = (s.member_id, s.client_id, s.host)  # type: ignore[attr-defined]
    return found


def described(config: Config, group: str, members: int) -> ScrapeResult:
    """A cycle in which the group is Stable with `members` members (the coordinator may still be
    rebalancing right after a join or a leave; waiting for it is a bound, not an assertion)."""
    stable = GROUP_STATE_CODES[ConsumerGroupState.STABLE]
    result: list[ScrapeResult] = []

    def settled() -> bool:
        result[:] = [collect_once(config)]
        return values(result[0], "consumer_group_members", group_id=group) == {(group, None, None): members} and (
            values(result[0], "consumer_group_state", group_id=group) == {(group, None, None): stable}
        )

    wait_for(settled, f"{group} to be Stable with {members} member(s)")
    return result[0]


def test_members_own_partitions_and_a_leave_moves_them_to_the_other_member(
    make_config: Callable[..., Config], kafka: KafkaWorkload, broker: RealKafkaBroker, unique: Callable[[str], str]
) -> None:
    topic, group = unique("owned-topic"), unique("owned-group")
    kafka.create_topic(topic, 4)
    kafka.produce(topic, {p: 50 for p in range(4)})
    config = make_config(collect={"groups_allow": [f"^{group}$"], "topics_allow": [f"^{topic}$"]})
    first = GroupMember(broker.bootstrap_servers, group, topic, "owner-a", commit_offset=10)
    second = GroupMember(broker.bootstrap_servers, group, topic, "owner-b", commit_offset=10)
    try:
        wait_for(lambda: len(first.assigned) == 2 and len(second.assigned) == 2, "both members to own 2 partitions")
        both = described(config, group, members=2)

        seen = owners(both, group)
        assert set(seen) == {0, 1, 2, 3}
        by_member = {m.member_id: m for m in (first, second)}
        for partition, (member_id, client_id, host) in seen.items():
            member = by_member[member_id or ""]
            assert client_id == member.client_id and partition in member.assigned
            assert (host or "").lstrip("/") == "127.0.0.1"
        assert {m for m, _, _ in seen.values()} == {first.member_id, second.member_id}
        moved = {p for p, (member_id, _, _) in seen.items() if member_id == second.member_id}
        assert len(moved) == 2
        assert values(both, "consumer_lag", group_id=group) == {(group, topic, p): 40.0 for p in range(4)}

        second.close()
        wait_for(lambda: first.assigned == {0, 1, 2, 3}, "the remaining member to own every partition")
        after = described(config, group, members=1)

        assert owners(after, group) == {p: (first.member_id, "owner-a", seen[p][2]) for p in range(4)}
        assert all(seen[p][0] == second.member_id for p in moved), "the new owner of the moved partitions"
    finally:
        second.close()
        first.close()
