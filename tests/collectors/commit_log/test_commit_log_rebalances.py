"""Every rebalance of a classic group is in the commit log: a group made to rebalance N times
between two drains (two collector cycles) gives `consumer_group_rebalances_total` samples whose
increases add up to exactly N, however the reader batched the records (Kafka 3.8 and 4.3)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from collectors.commit_log.reader import CommitLogReader, membership_samples
from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from lagwatch.membership import REBALANCES_METRIC
from tests.collectors.commit_log.test_commit_log import MAKE, started_reader
from tests.collectors.group_members import GroupMember
from tests.collectors.rebalancing import rebalance

REBALANCES = 4


@pytest.fixture
def reader(broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]) -> Iterator[CommitLogReader]:
    seed = unique("seed")
    kafka.create_topic(seed, 1)
    kafka.commit(seed, seed, {0: 0})  # the log exists
    started = started_reader(broker.bootstrap_servers)
    yield started
    started.close()


def rebalance_counts(reader: CommitLogReader, group: str) -> list[int]:
    """The group's rebalance-count samples of the changes drained now (one collector cycle's)."""
    samples = membership_samples([c for c in reader.drain_changes() if c.group_id == group], MAKE)
    return [int(s.value) for s in samples if s.metric == REBALANCES_METRIC and s.kind == "counter"]


def test_n_rebalances_between_two_cycles_count_n(
    broker: RealKafkaBroker, reader: CommitLogReader, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group = unique("topic"), unique("storm")
    kafka.create_topic(topic, 2)
    first = GroupMember(broker.bootstrap_servers, group, topic, "first", None)
    try:
        before: list[int] = []

        def first_generation() -> bool:
            before.extend(rebalance_counts(reader, group))
            return bool(before)

        wait_until(first_generation, 60, "the group's first generation")
        rebalance(broker.bootstrap_servers, group, topic, REBALANCES)
        wait_until(lambda: reader.groups()[group].generation >= before[-1] + REBALANCES, 60, "the last generation")
        after = rebalance_counts(reader, group)
    finally:
        first.close()
    increases = [b - a for a, b in zip([before[-1], *after], after, strict=False)]
    assert sum(increases) == REBALANCES, (before, after)
    assert all(step > 0 for step in increases)  # each sample is a new generation
