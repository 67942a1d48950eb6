"""The admin cycle's readers over Lagwatch's own protocol client on the real secured broker
(SASL_SSL, SCRAM-SHA-512, the StandardAuthorizer), as least-privilege principals, with the
secrets from the LAGWATCH_CLUSTER_SASL_* environment as an operator sets them.

Partition sizes (DescribeLogDirs) need Describe on the cluster: with the documented grants the
cycle sends each size-limited partition's size, equal to its segment files on disk; without
that one grant it says once which grant is missing and the cycle stays whole. The share-group
reader runs in the same cycles and fails nothing (on Kafka 3.x there are none to read).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic, ResourceType

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory
from harness.secure_kafka import (
    ADMIN_USER,
    MONITOR_NO_COMMIT_LOG,
    Acl,
    SecureKafkaBroker,
    monitor_config,
    new_scram_user,
)
from lagwatch.vocabulary import GROUP_SIZE_METRIC
from tests.collectors.admin.test_admin import values
from tests.collectors.log_dirs.test_log_dir_requests import segment_bytes_on_disk

CLUSTER = "secured-test"
MAKE = SampleFactory(cluster=CLUSTER, collector="test-instance")
PRODUCED = {0: 400, 1: 40}
SIZE_LIMIT = {"retention.bytes": "1048576"}
#: Everything the cycle reads, but Describe on the cluster (the one DescribeLogDirs needs).
WITHOUT_CLUSTER_DESCRIBE = [
    Acl(ResourceType.TOPIC, "*", AclOperation.DESCRIBE),
    Acl(ResourceType.GROUP, "*", AclOperation.DESCRIBE),
    Acl(ResourceType.TOPIC, "*", AclOperation.DESCRIBE_CONFIGS),
]


@pytest.fixture
def size_limited_group(secure_broker: SecureKafkaBroker, unique: Callable[[str], str]) -> tuple[str, str]:
    """A topic with retention.bytes and records, and a group committed on it: made by the super user."""
    topic, group = unique("secured-limited"), unique("secured-sizes-group")
    admin = AdminClient(secure_broker.client_settings(ADMIN_USER))
    admin.create_topics([NewTopic(topic, len(PRODUCED), 1, config=SIZE_LIMIT)])[topic].result(10)
    workload = secure_broker.admin_workload()
    workload.produce(topic, PRODUCED)
    workload.commit(group, topic, {p: 10 for p in PRODUCED})
    return topic, group


@pytest.fixture
def collector_as(secure_broker: SecureKafkaBroker) -> Iterator[Callable[..., AdminCollector]]:
    made: list[AdminCollector] = []

    def make(user: str, password: str, topic: str, group: str) -> AdminCollector:
        config = monitor_config(secure_broker, user, password, cluster=CLUSTER, commit_log="off",
                                topics_allow=[f"^{topic}$"], groups_allow=[f"^{group}$"])  # fmt: skip
        made.append(AdminCollector(config))
        return made[-1]

    yield make
    for collector in made:
        collector.close()


def test_with_describe_on_the_cluster_the_cycle_sends_each_partitions_size(
    secure_broker: SecureKafkaBroker,
    size_limited_group: tuple[str, str],
    collector_as: Callable[..., AdminCollector],
) -> None:
    topic, group = size_limited_group
    collector = collector_as(MONITOR_NO_COMMIT_LOG, secure_broker.users[MONITOR_NO_COMMIT_LOG], topic, group)
    result = collector.collect(1_700_000_000_000, MAKE)
    assert result.ok and result.errors == [], result.errors
    expected = {(group, topic, p): segment_bytes_on_disk(secure_broker, topic, p) for p in PRODUCED}
    assert values(result, GROUP_SIZE_METRIC) == expected
    assert expected[(group, topic, 0)] > expected[(group, topic, 1)] > 0


def test_without_describe_on_the_cluster_sizes_are_missed_once_by_name_not_as_errors(
    secure_broker: SecureKafkaBroker,
    size_limited_group: tuple[str, str],
    collector_as: Callable[..., AdminCollector],
    unique: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic, group = size_limited_group
    user = unique("no-cluster-describe")
    _, password = new_scram_user(secure_broker, user, WITHOUT_CLUSTER_DESCRIBE)
    collector = collector_as(user, password, topic, group)
    with caplog.at_level(logging.WARNING, logger="collectors.log_dirs.reader"):
        results = [collector.collect(1_700_000_000_000 + cycle * 15_000, MAKE) for cycle in range(2)]
    assert all(r.ok and r.errors == [] for r in results), [r.errors for r in results]
    assert all(values(r, GROUP_SIZE_METRIC) == {} for r in results)
    assert values(results[0], "consumer_lag"), "the rest of the cycle reads as before"
    assert [r.getMessage() for r in caplog.records] == [
        f"admin@{CLUSTER}: partition sizes not read: DescribeLogDirs refused (CLUSTER_AUTHORIZATION_FAILED): grant "
        "Describe on the Cluster resource to this principal for the retention margin's size limit"
    ]
