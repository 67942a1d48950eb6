"""The requests that read a cluster's streams groups (KIP-1071), encoded and decoded.

Field by field as Apache Kafka 4.3's message schemas have them (the JSON files in
clients/src/main/resources/common/message/ of the broker's kafka-clients jar), at the one
version Lagwatch sends of each:

- ApiVersions (collectors.kafka_protocol.api_versions): a broker without StreamsGroupDescribe
  has no streams groups to read (Kafka 3.x, a 4.x before streams groups);
- ListGroups v5 with TypesFilter ["streams"]: the streams groups this broker coordinates (the
  same request and answer as the share-group reading's, collectors.share_groups.requests);
- StreamsGroupDescribe v0: state, epochs, the topology's subtopologies (which topics each one
  reads) and the members with their active, standby and warm-up tasks.

Both are flexible versions (compact strings and arrays, tagged fields, request header v2). A
nullable struct (the topology, a member's endpoint) is preceded by one byte: -1 for null, 1
when present, as Kafka's generated message classes write it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.kafka_protocol.wire import Reader, Writer
from collectors.share_groups.requests import ListedGroup, decode_list_groups, encode_list_groups

__all__ = [
    "LIST_GROUPS",
    "LIST_GROUPS_VERSION",
    "STREAMS_GROUP_DESCRIBE",
    "STREAMS_GROUP_DESCRIBE_VERSION",
    "STREAMS_GROUP_TYPE",
    "ListedGroup",
    "StreamsGroupDescription",
    "StreamsMember",
    "Subtopology",
    "Tasks",
    "decode_list_groups",
    "decode_streams_group_describe",
    "encode_list_groups",
    "encode_streams_group_describe",
]

LIST_GROUPS, STREAMS_GROUP_DESCRIBE = 16, 89
LIST_GROUPS_VERSION, STREAMS_GROUP_DESCRIBE_VERSION = 5, 0
STREAMS_GROUP_TYPE = "streams"


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    #: The topics the subtopology reads: the user's source topics, then the internal repartition
    #: topics it reads (a task's partition N is partition N of each).
    source_topics: tuple[str, ...]


@dataclass(frozen=True)
class Tasks:
    """One kind of a member's tasks: subtopology id → the partitions of its tasks."""

    by_subtopology: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    client_id: str
    host: str
    process_id: str
    active: Tasks
    standby: Tasks
    warmup: Tasks


@dataclass(frozen=True)
class StreamsGroupDescription:
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    group_epoch: int
    #: None when the group has no initialized topology (a describe error, missing source topics).
    subtopologies: tuple[Subtopology, ...] | None = None
    members: tuple[StreamsMember, ...] = field(default=())

    def task_partitions(self, tasks: Tasks) -> list[tuple[str, int]]:
        """The source-topic partitions the tasks read: task (subtopology S, partition N) reads
        partition N of every topic S reads."""
        topics = {s.subtopology_id: s.source_topics for s in self.subtopologies or ()}
        return sorted(
            (topic, partition)
            for subtopology, partitions in tasks.by_subtopology
            for topic in topics.get(subtopology, ())
            for partition in partitions
        )


def encode_streams_group_describe(group_ids: list[str]) -> bytes:
    writer = Writer().compact_array(group_ids, Writer.compact_string)
    return writer.boolean(False).tagged_fields().bytes()  # IncludeAuthorizedOperations: no


def _struct_present(reader: Reader) -> bool:
    return reader.int8() >= 0


def _key_value(reader: Reader) -> None:
    reader.compact_string(), reader.compact_string()
    reader.skip_tagged_fields()


def _topic_info(reader: Reader) -> str:
    name = reader.compact_string()
    reader.int32()  # partitions
    reader.int16()  # replication factor
    reader.compact_array(_key_value)  # topic configs
    reader.skip_tagged_fields()
    return name


def _subtopology(reader: Reader) -> Subtopology:
    subtopology_id = reader.compact_string()
    sources = reader.compact_array(Reader.compact_string)
    reader.compact_array(Reader.compact_string)  # repartition sink topics
    reader.compact_array(_topic_info)  # state changelog topics
    repartition_sources = reader.compact_array(_topic_info)
    reader.skip_tagged_fields()
    return Subtopology(subtopology_id, tuple(sources) + tuple(repartition_sources))


def _topology(reader: Reader) -> tuple[Subtopology, ...] | None:
    if not _struct_present(reader):
        return None
    reader.int32()  # topology epoch
    size = reader.uvarint() - 1  # a nullable array: null while the group is not initialized
    subtopologies = None if size < 0 else tuple(_subtopology(reader) for _ in range(size))
    reader.skip_tagged_fields()
    return subtopologies


def _task_ids(reader: Reader) -> tuple[str, tuple[int, ...]]:
    subtopology = reader.compact_string()
    partitions = tuple(reader.compact_array(Reader.int32))
    reader.skip_tagged_fields()
    return subtopology, partitions


def _assignment(reader: Reader) -> tuple[Tasks, Tasks, Tasks]:
    active, standby, warmup = (Tasks(tuple(sorted(reader.compact_array(_task_ids)))) for _ in range(3))
    reader.skip_tagged_fields()
    return active, standby, warmup


def _task_offset(reader: Reader) -> None:
    reader.compact_string(), reader.int32(), reader.int64()
    reader.skip_tagged_fields()


def _endpoint(reader: Reader) -> None:
    if _struct_present(reader):
        reader.compact_string(), reader.int16()  # host, port (uint16: two bytes either way)
        reader.skip_tagged_fields()


def _member(reader: Reader) -> StreamsMember:
    member_id, member_epoch = reader.compact_string(), reader.int32()
    instance_id = reader.compact_nullable_string()
    reader.compact_nullable_string()  # rack id
    client_id, host = reader.compact_string(), reader.compact_string()
    reader.int32()  # topology epoch
    process_id = reader.compact_string()
    _endpoint(reader)  # user endpoint (interactive queries)
    reader.compact_array(_key_value)  # client tags
    reader.compact_array(_task_offset)  # task offsets
    reader.compact_array(_task_offset)  # task end offsets
    active, standby, warmup = _assignment(reader)
    _assignment(reader)  # target assignment
    reader.boolean()  # is classic
    reader.skip_tagged_fields()
    return StreamsMember(member_id, member_epoch, instance_id, client_id, host, process_id, active, standby, warmup)


def _described_group(reader: Reader) -> StreamsGroupDescription:
    error_code, error_message = reader.int16(), reader.compact_nullable_string()
    group_id, state = reader.compact_string(), reader.compact_string()
    group_epoch = reader.int32()
    reader.int32()  # assignment epoch
    subtopologies = _topology(reader)
    members = reader.compact_array(_member)
    reader.int32()  # authorized operations
    reader.skip_tagged_fields()
    return StreamsGroupDescription(
        group_id, error_code, error_message, state, group_epoch, subtopologies, tuple(members)
    )


def decode_streams_group_describe(reader: Reader) -> list[StreamsGroupDescription]:
    reader.int32()  # throttle time
    groups = reader.compact_array(_described_group)
    reader.skip_tagged_fields()
    return groups
