"""DescribeLogDirs against bytes laid out by hand from Kafka's DescribeLogDirsRequest.json and
DescribeLogDirsResponse.json (the kafka-clients jar's common/message/), and against the real
broker (tests/collectors run on Kafka 4.3.1 and 3.8.0): the version the broker speaks, and each
partition's size equal to its segment files on the broker's disk."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from collectors.kafka_protocol.api_versions import api_versions, newest_common_version
from collectors.kafka_protocol.connection import BrokerConnection
from collectors.kafka_protocol.wire import BrokerError, Reader
from collectors.log_dirs.reader import read_partition_sizes
from collectors.log_dirs.requests import (
    DESCRIBE_LOG_DIRS,
    LOG_DIRS_VERSIONS,
    LogDir,
    ReplicaSize,
    decode_describe_log_dirs,
    encode_describe_log_dirs,
)
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from shell.broker import free_port

#: One log dir "/d" holding t[0] (1024 bytes) and a future copy of t[1] (16 bytes), as v2..v5 lay it out.
_TOPIC = "".join(
    (
        "0274",  # topic "t"
        "03",  # two partitions
        "00000000", "0000000000000400", "0000000000000000", "00", "00",  # 0: 1024 B, lag 0, current log
        "00000001", "0000000000000010", "0000000000000007", "01", "00",  # 1: 16 B, lag 7, future log
        "00",  # topic tags
    )
)  # fmt: skip
_DIR = "0000032f6402" + _TOPIC
_REPLICAS = (ReplicaSize("t", 0, 1024, False), ReplicaSize("t", 1, 16, True))


def _hex(*parts: str) -> Reader:
    return Reader(bytes.fromhex("".join(parts)))


def test_request_names_each_topics_partitions_or_null_for_all() -> None:
    assert encode_describe_log_dirs({"t": [0, 1]}).hex() == "0202740300000000000000010000"
    assert encode_describe_log_dirs(None).hex() == "0000"


@pytest.mark.parametrize(
    ("version", "body", "expected"),
    [
        (2, ["00000000", "02", _DIR, "00", "00"], LogDir("/d", 0, _REPLICAS)),
        (3, ["00000000", "0000", "02", _DIR, "00", "00"], LogDir("/d", 0, _REPLICAS)),
        (4, ["00000000", "0000", "02", _DIR, "0000000000100000", "0000000000080000", "00", "00"],
         LogDir("/d", 0, _REPLICAS, 1 << 20, 1 << 19)),
        (5, ["00000000", "0000", "02", _DIR, "0000000000100000", "0000000000080000", "01", "00", "00"],
         LogDir("/d", 0, _REPLICAS, 1 << 20, 1 << 19)),
    ],
)  # fmt: skip
def test_response_of_each_flexible_version(version: int, body: list[str], expected: LogDir) -> None:
    reader = _hex(*body)
    assert decode_describe_log_dirs(reader, version) == [expected]
    assert reader.remaining == 0


def test_a_refused_request_raises_its_error_by_name() -> None:
    with pytest.raises(BrokerError, match="DescribeLogDirs: CLUSTER_AUTHORIZATION_FAILED") as refused:
        decode_describe_log_dirs(_hex("00000000", "001f", "01", "00"), 3)
    assert refused.value.code == 31


def test_an_offline_log_dir_keeps_its_own_error() -> None:
    dirs = decode_describe_log_dirs(_hex("00000000", "0000", "02", "0038", "032f64", "01", "00", "00"), 3)
    assert dirs == [LogDir("/d", 56, ())]  # KAFKA_STORAGE_ERROR


def _spoken_version(broker: RealKafkaBroker) -> int | None:
    with BrokerConnection("127.0.0.1", broker.port, "test", time.monotonic() + 10) as connection:
        return newest_common_version(api_versions(connection, "0"), DESCRIBE_LOG_DIRS, LOG_DIRS_VERSIONS)


def test_the_newest_version_both_sides_speak(broker: RealKafkaBroker) -> None:
    """Kafka 3.8 speaks DescribeLogDirs v0-v4, Kafka 4.2+ v1-v5."""
    assert _spoken_version(broker) == (5 if broker.version >= (4, 2, 0) else 4)


def segment_bytes_on_disk(broker: RealKafkaBroker, topic: str, partition: int) -> int:
    """What the broker's log dir holds for the partition: the sum of its segment (.log) files."""
    return sum(f.stat().st_size for f in (broker.work_dir / "data" / f"{topic}-{partition}").glob("*.log"))


def test_sizes_are_the_leaders_segment_files_on_disk(
    broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
) -> None:
    topic, other = unique("sized"), unique("not-asked")
    kafka.create_topic(topic, 3)
    kafka.create_topic(other, 1)
    kafka.produce(topic, {0: 500, 1: 20})  # partition 2 stays empty
    kafka.produce(other, {0: 50})
    wanted = [(topic, 0), (topic, 1), (topic, 2)]
    read = read_partition_sizes({1: ("127.0.0.1", broker.port)}, {1: wanted}, time.monotonic() + 10)
    assert (read.errors, read.unreadable) == ([], None)
    assert read.sizes == {where: segment_bytes_on_disk(broker, *where) for where in wanted}
    assert read.sizes[(topic, 0)] > read.sizes[(topic, 1)] > read.sizes[(topic, 2)] == 0
    assert Path(broker.work_dir / "data" / f"{other}-0").is_dir()  # exists, yet was not asked for


def test_a_broker_that_does_not_answer_is_an_error_of_the_cycle() -> None:
    read = read_partition_sizes({1: ("127.0.0.1", free_port())}, {1: [("t", 0)]}, time.monotonic() + 5)
    assert read.sizes == {} and read.unreadable is None
    assert len(read.errors) == 1 and read.errors[0].startswith("partition sizes on 127.0.0.1:")
