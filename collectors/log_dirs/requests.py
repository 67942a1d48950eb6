"""DescribeLogDirs (API key 35), encoded and decoded: each partition replica's size on a broker's disk.

Why: a topic's `retention.bytes` deletes the oldest segments of a partition beyond that size,
so how close it is to a group's committed offset depends on the partition's size, which only
the broker that holds the replica can say (no Python client has the call). Field by field as
Apache Kafka's DescribeLogDirsRequest.json / DescribeLogDirsResponse.json have them (in the
broker's kafka-clients jar, common/message/), flexible versions only (v2 and newer):

- v2: the first flexible version (Kafka 2.4); v3 adds a top-level ErrorCode (so a refused
  request says CLUSTER_AUTHORIZATION_FAILED instead of answering nothing); v4 adds each log
  dir's TotalBytes and UsableBytes; v5 (Kafka 4.2) its IsCordoned flag.
- Kafka 3.8 speaks v0-v4, Kafka 4.x v1-v5: the reader sends the newest both sides speak.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collectors.kafka_protocol.wire import BrokerError, Reader, Writer

DESCRIBE_LOG_DIRS = 35
#: The versions Lagwatch speaks (all flexible), oldest first.
LOG_DIRS_VERSIONS = (2, 3, 4, 5)
#: TotalBytes / UsableBytes before v4 (the broker's own default for "not said").
UNKNOWN_BYTES = -1


@dataclass(frozen=True, slots=True)
class ReplicaSize:
    """One partition replica in one log dir."""

    topic: str
    partition: int
    size_bytes: int
    #: True for the copy AlterReplicaLogDirs is building to replace the current one: not the log in use.
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log dir of the broker: its error (e.g. KAFKA_STORAGE_ERROR for an offline dir) and replicas."""

    path: str
    error_code: int
    replicas: tuple[ReplicaSize, ...] = field(default=())
    total_bytes: int = UNKNOWN_BYTES
    usable_bytes: int = UNKNOWN_BYTES


def encode_describe_log_dirs(partitions: Mapping[str, Sequence[int]] | None) -> bytes:
    """The request for `partitions` (topic → partition indexes), or for every replica (None)."""

    def topic(writer: Writer, item: tuple[str, Sequence[int]]) -> None:
        name, indexes = item
        writer.compact_string(name).compact_array(list(indexes), Writer.int32).tagged_fields()

    topics = None if partitions is None else sorted(partitions.items())
    return Writer().compact_array(topics, topic).tagged_fields().bytes()


def decode_describe_log_dirs(reader: Reader, version: int) -> list[LogDir]:
    """The response's log dirs; a top-level error (v3+) is a :class:`BrokerError`."""
    reader.int32()  # throttle time
    error_code = reader.int16() if version >= 3 else 0

    def replica_of(topic: str) -> ReplicaSize:
        index, size = reader.int32(), reader.int64()
        reader.int64()  # offset lag (of the log end behind the high watermark)
        is_future = reader.boolean()
        reader.skip_tagged_fields()
        return ReplicaSize(topic, index, size, is_future)

    def topic_replicas(r: Reader) -> list[ReplicaSize]:
        topic = r.compact_string()
        replicas = r.compact_array(lambda _: replica_of(topic))
        r.skip_tagged_fields()
        return replicas

    def log_dir(r: Reader) -> LogDir:
        dir_error, path = r.int16(), r.compact_string()
        topics = r.compact_array(topic_replicas)
        total, usable = (r.int64(), r.int64()) if version >= 4 else (UNKNOWN_BYTES, UNKNOWN_BYTES)
        if version >= 5:
            r.boolean()  # is cordoned
        r.skip_tagged_fields()
        return LogDir(path, dir_error, tuple(rep for topic in topics for rep in topic), total, usable)

    dirs = reader.compact_array(log_dir)
    reader.skip_tagged_fields()
    if error_code:
        raise BrokerError("DescribeLogDirs", error_code)
    return dirs
