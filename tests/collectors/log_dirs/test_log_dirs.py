"""Partition sizes in the admin cycle, against the real broker (and tansu, which lacks the request).

A group committed on three topics: one with a size limit (retention.bytes), one compacted (whose
retention.bytes deletes nothing) and one without a size limit. The first cycle reads the size
of each partition of the size-limited topic only, and sends it per group-partition as
`group_partition_size_bytes`, equal to the partition's segment files on the broker's disk. What
stops the reading (a security setting the reader's client cannot use, a broker without the request)
is said once, and a cluster without size limits is never asked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from collectors.admin.collector import AdminCollector
from collectors.kafka_protocol.security import CLIENT
from collectors.log_dirs.reader import LogDirReader, PartitionSizes
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config
from lagwatch.vocabulary import GROUP_SIZE_METRIC
from shell.broker import EmbeddedBroker
from tests.collectors.admin.test_admin import MAKE, values
from tests.collectors.log_dirs.test_log_dir_requests import segment_bytes_on_disk

PRODUCED = {0: 400, 1: 40}


def test_the_cycle_sends_each_size_limited_partitions_size_per_group(
    make_config: Callable[..., Config], broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    names = {kind: unique(f"sizes-{kind}") for kind in ("limited", "compacted", "unlimited")}
    settings = {
        "limited": {"retention.bytes": "1048576"},
        "compacted": {"cleanup.policy": "compact", "retention.bytes": "1048576"},
        "unlimited": {},
    }
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(names[k], 2, 1, config=settings[k]) for k in names]).values():
        future.result(10)
    group = unique("sizes-group")
    for kind in ("limited", "unlimited"):
        kafka.produce(names[kind], PRODUCED)
        kafka.commit(group, names[kind], {0: 10, 1: 10})
    kafka.commit(group, names["compacted"], {0: 0, 1: 0})
    config = make_config(collect={"topics_allow": [f"^{n}$" for n in names.values()], "groups_allow": [f"^{group}$"]})
    collector = AdminCollector(config)
    try:
        result = collector.collect(1_700_000_000_000, MAKE)
    finally:
        collector.close()

    assert result.ok and [e for e in result.errors if "size" in e] == [], result.errors
    limited = names["limited"]
    expected = {(group, limited, p): segment_bytes_on_disk(broker, limited, p) for p in PRODUCED}
    assert values(result, GROUP_SIZE_METRIC) == expected, "the size-limited topic's partitions, and only those"
    assert expected[(group, limited, 0)] > expected[(group, limited, 1)] > 0


def test_a_cluster_without_size_limits_is_never_asked() -> None:
    reader = LogDirReader("admin@test", {}, cluster="test")
    try:
        # No metadata at all: the reader must not even look for brokers.
        assert reader.begin(None, [], time.monotonic() + 5)() == PartitionSizes()
    finally:
        reader.close()


def test_a_security_setting_the_client_cannot_use_is_said_once_and_not_connected_to(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = LogDirReader("admin@test", {"security.protocol": "SSL", "ssl.keystore.location": "/k.p12"}, cluster="test")
    try:
        with caplog.at_level(logging.WARNING, logger="collectors.log_dirs.reader"):
            reads = [reader.begin(None, ["t"], time.monotonic() + 5)() for _ in range(3)]
    finally:
        reader.close()
    assert reads == [PartitionSizes()] * 3
    assert [r.getMessage() for r in caplog.records] == [
        f"admin@test: partition sizes not read: cluster test: ssl.keystore.location is not supported by {CLIENT}; "
        "use ssl.certificate.location and ssl.key.location (PEM files); no size limit in the retention margin"
    ]


def test_a_broker_without_the_request_is_said_once(tansu: EmbeddedBroker, caplog: pytest.LogCaptureFixture) -> None:
    """tansu speaks no DescribeLogDirs: nothing read, no error per cycle, one log line."""
    topic = f"sizes-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    metadata = admin.list_topics(timeout=10)
    reader = LogDirReader("admin@tansu", {}, cluster="tansu")
    try:
        with caplog.at_level(logging.WARNING, logger="collectors.log_dirs.reader"):
            reads = [reader.begin(metadata, [topic], time.monotonic() + 5)() for _ in range(2)]
    finally:
        reader.close()
    assert [(r.sizes, r.errors) for r in reads] == [({}, [])] * 2
    [said] = [r.getMessage() for r in caplog.records]
    assert said.startswith("admin@tansu: partition sizes not read: ") and "does not speak DescribeLogDirs v2+" in said
