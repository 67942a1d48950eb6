"""The four requests that read a cluster's share groups (KIP-932), encoded and decoded.

Field by field as Apache Kafka 4.3's message schemas have them (the JSON files in
clients/src/main/resources/common/message/ of the broker's kafka-clients jar), at the one
version Lagwatch sends of each:

- ApiVersions (collectors.kafka_protocol.api_versions): a broker without the share-group requests has no
  share groups to read (Kafka 3.x, a 4.x without share.version);
- ListGroups v5 with TypesFilter ["share"]: the share groups this broker coordinates;
- ShareGroupDescribe v1: state, epoch and members with their assigned partitions;
- DescribeShareGroupOffsets v0 or v1 (all topics): each partition's share-partition start
  offset, and from v1 (KIP-1226) the share lag the group coordinator computes.

All are flexible versions (compact strings and arrays, tagged fields, request header v2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.kafka_protocol.wire import BrokerError, Reader, Writer

LIST_GROUPS, SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS = 16, 77, 90
#: The version sent of each request (DescribeShareGroupOffsets: the broker's newest up to this).
LIST_GROUPS_VERSION, SHARE_GROUP_DESCRIBE_VERSION = 5, 1
OFFSETS_VERSIONS = (0, 1)
#: What the broker writes when it does not know a partition's lag (and what v0 means).
UNKNOWN_LAG = -1
SHARE_GROUP_TYPE = "share"
# -- ListGroups v5 -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    state: str
    group_type: str


def encode_list_groups(types: list[str]) -> bytes:
    return (
        Writer()
        .compact_array([], Writer.compact_string)  # StatesFilter: every state
        .compact_array(types, Writer.compact_string)
        .tagged_fields()
        .bytes()
    )


def decode_list_groups(reader: Reader) -> list[ListedGroup]:
    reader.int32()  # throttle time
    error_code = reader.int16()

    def group(r: Reader) -> ListedGroup:
        group_id, _protocol_type, state, group_type = (r.compact_string() for _ in range(4))
        r.skip_tagged_fields()
        return ListedGroup(group_id, state, group_type)

    groups = reader.compact_array(group)
    reader.skip_tagged_fields()
    if error_code:
        raise BrokerError("ListGroups", error_code)
    return groups


# -- ShareGroupDescribe v1 ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    #: (topic, partition) pairs assigned to the member; in a share group several members may share one.
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    group_epoch: int
    members: tuple[ShareMember, ...] = field(default=())


def encode_share_group_describe(group_ids: list[str]) -> bytes:
    writer = Writer().compact_array(group_ids, Writer.compact_string)
    return writer.boolean(False).tagged_fields().bytes()  # IncludeAuthorizedOperations: no


def _assigned_topic(reader: Reader) -> list[tuple[str, int]]:
    reader.uuid()  # topic id
    topic = reader.compact_string()
    partitions = reader.compact_array(Reader.int32)
    reader.skip_tagged_fields()
    return [(topic, partition) for partition in partitions]


def _share_member(reader: Reader) -> ShareMember:
    member_id = reader.compact_string()
    reader.compact_nullable_string()  # rack id
    member_epoch = reader.int32()
    client_id, host = reader.compact_string(), reader.compact_string()
    reader.compact_array(Reader.compact_string)  # subscribed topic names
    topics = reader.compact_array(_assigned_topic)  # the Assignment struct: its one field ...
    reader.skip_tagged_fields()  # ... and its tagged fields
    reader.skip_tagged_fields()
    assignment = tuple(sorted(tp for topic in topics for tp in topic))
    return ShareMember(member_id, client_id, host, member_epoch, assignment)


def _described_group(reader: Reader) -> ShareGroupDescription:
    error_code, error_message = reader.int16(), reader.compact_nullable_string()
    group_id, state = reader.compact_string(), reader.compact_string()
    group_epoch = reader.int32()
    reader.int32()  # assignment epoch
    reader.compact_string()  # assignor name
    members = reader.compact_array(_share_member)
    reader.int32()  # authorized operations
    reader.skip_tagged_fields()
    return ShareGroupDescription(group_id, error_code, error_message, state, group_epoch, tuple(members))


def decode_share_group_describe(reader: Reader) -> list[ShareGroupDescription]:
    reader.int32()  # throttle time
    groups = reader.compact_array(_described_group)
    reader.skip_tagged_fields()
    return groups


# -- DescribeShareGroupOffsets v0 / v1 ---------------------------------------------------------------


@dataclass(frozen=True)
class SharePartitionOffset:
    topic: str
    partition: int
    #: The share-partition start offset: every record below it is acknowledged (or archived).
    start_offset: int
    #: Records from the start offset to the end not yet acknowledged; None where the broker did not say.
    lag: int | None
    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True)
class ShareGroupOffsets:
    group_id: str
    error_code: int
    error_message: str | None
    partitions: tuple[SharePartitionOffset, ...] = field(default=())


def encode_describe_share_group_offsets(group_ids: list[str]) -> bytes:
    def group(writer: Writer, group_id: str) -> None:
        writer.compact_string(group_id).compact_array(None, Writer.compact_string).tagged_fields()  # all topics

    return Writer().compact_array(group_ids, group).tagged_fields().bytes()


def decode_describe_share_group_offsets(reader: Reader, version: int) -> list[ShareGroupOffsets]:
    def partition_of(topic: str) -> SharePartitionOffset:
        index, start_offset = reader.int32(), reader.int64()
        reader.int32()  # leader epoch
        lag = reader.int64() if version >= 1 else UNKNOWN_LAG
        error_code, error_message = reader.int16(), reader.compact_nullable_string()
        reader.skip_tagged_fields()
        return SharePartitionOffset(
            topic, index, start_offset, None if lag == UNKNOWN_LAG else lag, error_code, error_message
        )

    def topic_partitions(r: Reader) -> list[SharePartitionOffset]:
        topic = r.compact_string()
        r.uuid()  # topic id
        partitions = r.compact_array(lambda _: partition_of(topic))
        r.skip_tagged_fields()
        return partitions

    def group(r: Reader) -> ShareGroupOffsets:
        group_id = r.compact_string()
        topics = r.compact_array(topic_partitions)
        error_code, error_message = r.int16(), r.compact_nullable_string()
        r.skip_tagged_fields()
        partitions = tuple(p for topic in topics for p in topic)
        return ShareGroupOffsets(group_id, error_code, error_message, partitions)

    reader.int32()  # throttle time
    groups = reader.compact_array(group)
    reader.skip_tagged_fields()
    return groups
