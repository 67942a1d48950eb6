"""The admin collector's rules for readings → samples, on real confluent-kafka metadata objects.

A single tansu broker can never show an under-replicated or leaderless partition, so those
rules are checked on ClusterMetadata built the way librdkafka fills it.
"""

from __future__ import annotations

from confluent_kafka import OFFSET_INVALID, ConsumerGroupState, TopicPartition
from confluent_kafka.admin import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata

from collectors.admin.samples import (
    GROUP_STATE_CODES,
    GroupStateSamples,
    LagCounts,
    NameFilter,
    cluster_samples,
    group_offset_samples,
)
from collectors.base import SampleFactory

MAKE = SampleFactory(cluster="c", collector="i")
ALL_BUT_INTERNAL = NameFilter([".*"], ["^__"])


def partition(index: int, leader: int, replicas: list[int], isrs: list[int]) -> PartitionMetadata:
    meta = PartitionMetadata()
    meta.id, meta.leader, meta.replicas, meta.isrs = index, leader, replicas, isrs
    return meta


def three_broker_cluster() -> ClusterMetadata:
    """orders: p0 healthy, p1 under-replicated, p2 leaderless; __internal: p0 under-replicated."""
    cluster = ClusterMetadata()
    cluster.controller_id = 2
    for broker_id in (1, 2, 3):
        broker = BrokerMetadata()
        broker.id = broker_id
        cluster.brokers[broker_id] = broker
    layout = {
        "orders": [
            partition(0, 1, [1, 2, 3], [1, 2, 3]),
            partition(1, 2, [2, 3, 1], [2]),
            partition(2, -1, [3, 1], []),
        ],
        "__internal": [partition(0, 3, [3, 1], [3])],
    }
    for name, partitions in layout.items():
        topic = TopicMetadata()
        topic.topic, topic.partitions = name, {p.id: p for p in partitions}
        cluster.topics[name] = topic
    return cluster


def by_key(samples: list) -> dict[tuple, float]:
    return {(s.metric, s.broker, s.topic): s.value for s in samples}


def test_cluster_samples_count_replicas_leaders_and_replication_health() -> None:
    got = by_key(cluster_samples(three_broker_cluster(), ALL_BUT_INTERNAL, 1, MAKE))

    assert got[("broker_count", None, None)] == 3
    assert got[("controller_id", None, None)] == 2
    assert {b: got[("partition_count", b, None)] for b in "123"} == {"1": 4, "2": 2, "3": 4}
    assert {b: got[("leader_count", b, None)] for b in "123"} == {"1": 1, "2": 1, "3": 1}
    # Cluster totals include internal topics; per-topic gauges follow the topic filter.
    assert got[("under_replicated_partitions", None, None)] == 3
    assert got[("offline_partitions", None, None)] == 1
    assert got[("under_replicated_partitions", None, "orders")] == 2
    assert got[("topic_partitions", None, "orders")] == 3
    assert not any(topic == "__internal" for _, _, topic in got)


def test_lag_skips_missing_commits_and_flags_commits_beyond_the_end() -> None:
    partitions = [
        TopicPartition("orders", 0, 40),
        TopicPartition("orders", 1, OFFSET_INVALID),
        TopicPartition("orders", 2, 90),
        TopicPartition("gone", 0, 7),
        TopicPartition("__internal", 0, 1),
    ]
    ends = {("orders", 0): 100, ("orders", 1): 50, ("orders", 2): 80, ("__internal", 0): 5}
    counts = LagCounts()

    samples = group_offset_samples("g", partitions, ends, ALL_BUT_INTERNAL, 1, MAKE, counts)

    got = {(s.metric, s.topic, s.partition): s.value for s in samples}
    assert got == {
        ("committed_offset", "orders", 0): 40,
        ("consumer_lag", "orders", 0): 60,
        ("committed_offset", "orders", 2): 90,
        ("consumer_lag_negative", "orders", 2): 1,
        ("committed_offset", "gone", 0): 7,
    }
    assert (counts.no_commit, counts.negative, counts.no_end_offset) == (1, 1, 1)
    assert all(s.group_id == "g" and s.source == "admin" for s in samples)


def test_group_state_codes_are_distinct_and_only_reported_values_are_sampled() -> None:
    assert len(set(GROUP_STATE_CODES.values())) == len(ConsumerGroupState)
    stable = GroupStateSamples(1, MAKE)("g", GROUP_STATE_CODES[ConsumerGroupState.STABLE], 3)
    assert {(s.metric, s.value) for s in stable} == {("consumer_group_state", 2), ("consumer_group_members", 3)}
    assert GroupStateSamples(1, MAKE)("g", None, None) == []
    # The same samples, ids included, as one built by the factory itself.
    [state] = [s for s in stable if s.metric == "consumer_group_state"]
    assert state == MAKE(ts=1, source="admin", metric="consumer_group_state", kind="gauge", value=2, group_id="g")


def test_name_filter_needs_an_allow_match_and_no_deny_match() -> None:
    allowed = NameFilter(["^app-", "^billing$"], ["-test$"])
    assert [allowed(n) for n in ("app-orders", "billing", "billing-2", "app-orders-test", "other")] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_each_committed_partition_with_a_known_log_start_gets_the_groups_log_start() -> None:
    partitions = [
        TopicPartition("orders", 0, 40),
        TopicPartition("orders", 1, OFFSET_INVALID),
        TopicPartition("gone", 0, 7),
    ]
    ends, starts = {("orders", 0): 100, ("orders", 1): 50}, {("orders", 0): 12, ("orders", 1): 3}

    samples = group_offset_samples("g", partitions, ends, ALL_BUT_INTERNAL, 1, MAKE, LagCounts(), starts)

    got = {(s.topic, s.partition): s for s in samples if s.metric == "group_log_start_offset"}
    assert {key: s.value for key, s in got.items()} == {("orders", 0): 12}  # no commit on 1, no start for gone
    expected = MAKE(ts=1, source="admin", metric="group_log_start_offset", kind="gauge", value=12,
                    topic="orders", partition=0, group_id="g")  # fmt: skip
    assert got[("orders", 0)] == expected
