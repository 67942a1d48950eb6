"""DescribeGroups v5/v6 and ConsumerGroupDescribe v0/v1, encoded and decoded: many consumer
groups described in one request, answered as the admin collector's samples read a description.

Why: confluent-kafka describes each group with requests of its own, and librdkafka's handling
of thousands of them is a large part of a cycle's CPU. Field by field as Apache Kafka's
DescribeGroups*.json / ConsumerGroupDescribe*.json have them (common/message/ in the broker's
kafka-clients jar):

- DescribeGroups (API 15) describes classic groups. v5 is its first flexible version (Kafka 2.4+),
  v6 (Kafka 4.0+) adds a per-group error message. A classic member's assignment is the bytes its
  leader chose; for protocol type "consumer" they are a ConsumerProtocol Assignment (decoded
  here), for any other protocol type (Connect, Schema Registry) they mean nothing to a lag monitor.
- ConsumerGroupDescribe (API 69) describes consumer (KIP-848) groups: each member's assignment
  and target assignment by topic id and name; v1 adds the member type. Kafka's DescribeGroups
  does not describe such a group (its coordinator answers GROUP_ID_NOT_FOUND, or Dead on 3.x),
  so their members and targets come only from here.

The description's `state` and `type` are confluent-kafka's own enums, named from the wire's
strings as librdkafka names them, so a group reads the same codes whichever client described it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from confluent_kafka import ConsumerGroupState, ConsumerGroupType

from collectors.kafka_protocol.packed_decode import (
    compact_array,
    compact_bytes,
    compact_string,
    decode_whole,
    skip_tags,
    uvarint,
)
from collectors.kafka_protocol.wire import Reader, Writer

DESCRIBE_GROUPS = 15
#: The DescribeGroups versions Lagwatch speaks (flexible), oldest first.
DESCRIBE_GROUPS_VERSIONS = (5, 6)
CONSUMER_GROUP_DESCRIBE = 69
#: The ConsumerGroupDescribe versions Lagwatch speaks, oldest first.
CONSUMER_GROUP_DESCRIBE_VERSIONS = (0, 1)
#: The classic protocol type whose member assignments are ConsumerProtocol Assignments.
CONSUMER_PROTOCOL_TYPE = "consumer"

#: librdkafka's state names (rd_kafka_consumer_group_state_code, matched ignoring case); a state it
#: does not name (a consumer group's Assigning, Reconciling) reads UNKNOWN, as it does there.
_STATES = {
    "preparingrebalance": ConsumerGroupState.PREPARING_REBALANCING,
    "completingrebalance": ConsumerGroupState.COMPLETING_REBALANCING,
    "stable": ConsumerGroupState.STABLE,
    "dead": ConsumerGroupState.DEAD,
    "empty": ConsumerGroupState.EMPTY,
}
_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")


class AssignedPartition(NamedTuple):
    """One partition of a member's assignment (read as confluent-kafka's TopicPartition is: .topic, .partition)."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """The partitions of one assignment (confluent-kafka's MemberAssignment has the same field)."""

    topic_partitions: list[AssignedPartition] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member as confluent-kafka's MemberDescription has it; `target_assignment` only for a
    consumer (KIP-848) group's member (None: a classic member, which has no target)."""

    member_id: str
    client_id: str
    host: str
    group_instance_id: str | None
    assignment: MemberAssignment
    target_assignment: MemberAssignment | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """One group's answer, with the attributes the admin collector reads of confluent-kafka's
    ConsumerGroupDescription (state, type, members); `error_code` 0 unless the broker refused it."""

    group_id: str
    error_code: int
    error_message: str | None
    state: ConsumerGroupState
    type: ConsumerGroupType
    protocol_type: str = ""
    members: list[GroupMember] = field(default_factory=list)


def group_state(name: str) -> ConsumerGroupState:
    """A state string from the wire as librdkafka names it (UNKNOWN where it has no name for it)."""
    return _STATES.get(name.lower(), ConsumerGroupState.UNKNOWN)


# -- both responses, read in one pass (collectors/kafka_protocol/packed_decode.py) ---------------------


def _decoded(
    reader: Reader, request: str, group: Callable[[bytes, int], tuple[GroupDescription, int]]
) -> list[GroupDescription]:
    return decode_whole(reader, request, lambda data, at: compact_array(data, at, group))


# -- DescribeGroups v5 / v6 -------------------------------------------------------------------------


def encode_describe_groups(group_ids: Sequence[str]) -> bytes:
    writer = Writer().compact_array(list(group_ids), Writer.compact_string)
    return writer.boolean(False).tagged_fields().bytes()  # IncludeAuthorizedOperations: no


def decode_describe_groups(reader: Reader, version: int) -> list[GroupDescription]:
    """The groups of a v5 or v6 response, each typed CLASSIC (the only groups DescribeGroups describes)."""
    return _decoded(reader, "DescribeGroups", lambda data, at: _classic_group(data, at, version))


def _classic_group(data: bytes, at: int, version: int) -> tuple[GroupDescription, int]:
    (error_code,), at = _INT16.unpack_from(data, at), at + 2
    error_message, at = compact_string(data, at) if version >= 6 else (None, at)
    group_id, at = compact_string(data, at)
    state, at = compact_string(data, at)
    protocol_type, at = compact_string(data, at)
    _protocol_data, at = compact_string(data, at)  # the assignor's name
    consumer_protocol = protocol_type == CONSUMER_PROTOCOL_TYPE
    members, at = compact_array(data, at, lambda data, at: _classic_member(data, at, consumer_protocol))
    at = skip_tags(data, at + 4)  # after the authorized operations
    described = GroupDescription(
        group_id or "", error_code, error_message, group_state(state or ""), ConsumerGroupType.CLASSIC,
        protocol_type or "", members,
    )  # fmt: skip
    return described, at


def _classic_member(data: bytes, at: int, consumer_protocol: bool) -> tuple[GroupMember, int]:
    member_id, at = compact_string(data, at)
    instance_id, at = compact_string(data, at)
    client_id, at = compact_string(data, at)
    host, at = compact_string(data, at)
    _metadata, at = compact_bytes(data, at)  # the subscription
    assignment, at = compact_bytes(data, at)
    partitions = decode_member_assignment(assignment) if consumer_protocol else []
    member = GroupMember(member_id or "", client_id or "", host or "", instance_id, MemberAssignment(partitions))
    return member, skip_tags(data, at)


def decode_member_assignment(data: bytes) -> list[AssignedPartition]:
    """A ConsumerProtocol Assignment (int16 version, [topic: string, [partition: int32]], user data):
    its partitions. Bytes that do not parse own nothing known: one member's garbage must not
    fail the group, let alone the cycle."""
    try:
        return _assignment_partitions(data)
    except (IndexError, struct.error, UnicodeDecodeError, ValueError):
        return []


def _assignment_partitions(data: bytes) -> list[AssignedPartition]:
    if not data:
        return []  # no assignment yet (a member joining)
    (version,) = _INT16.unpack_from(data, 0)
    if version < 0:
        raise ValueError(f"assignment version {version}")
    (topics,), at = _INT32.unpack_from(data, 2), 6
    partitions: list[AssignedPartition] = []
    for _ in range(max(topics, 0)):
        (size,) = _INT16.unpack_from(data, at)
        if size < 0 or at + 2 + size > len(data):
            raise ValueError("topic name past the end")
        topic, at = data[at + 2 : at + 2 + size].decode(), at + 2 + size
        (count,), at = _INT32.unpack_from(data, at), at + 4
        if count < 0 or at + 4 * count > len(data):
            raise ValueError("partitions past the end")
        partitions.extend(AssignedPartition(topic, p) for p in struct.unpack_from(f">{count}i", data, at))
        at += 4 * count
    return partitions  # the user data after them means nothing here


# -- ConsumerGroupDescribe v0 / v1 -------------------------------------------------------------------


def encode_consumer_group_describe(group_ids: Sequence[str]) -> bytes:
    return encode_describe_groups(group_ids)  # the same fields: the group ids, IncludeAuthorizedOperations


def decode_consumer_group_describe(reader: Reader, version: int) -> list[GroupDescription]:
    """The groups of a v0 or v1 response, each typed CONSUMER."""
    return _decoded(reader, "ConsumerGroupDescribe", lambda data, at: _consumer_group(data, at, version))


def _consumer_group(data: bytes, at: int, version: int) -> tuple[GroupDescription, int]:
    (error_code,), at = _INT16.unpack_from(data, at), at + 2
    error_message, at = compact_string(data, at)
    group_id, at = compact_string(data, at)
    state, at = compact_string(data, at)
    _assignor, at = compact_string(data, at + 8)  # after the group epoch and assignment epoch
    members, at = compact_array(data, at, lambda data, at: _consumer_member(data, at, version))
    at = skip_tags(data, at + 4)  # after the authorized operations
    described = GroupDescription(
        group_id or "", error_code, error_message, group_state(state or ""), ConsumerGroupType.CONSUMER,
        CONSUMER_PROTOCOL_TYPE, members,
    )  # fmt: skip
    return described, at


def _consumer_member(data: bytes, at: int, version: int) -> tuple[GroupMember, int]:
    member_id, at = compact_string(data, at)
    instance_id, at = compact_string(data, at)
    _rack, at = compact_string(data, at)
    client_id, at = compact_string(data, at + 4)  # after the member epoch
    host, at = compact_string(data, at)
    topics, at = uvarint(data, at)  # the subscribed topic names
    for _ in range(topics - 1):
        _topic, at = compact_string(data, at)
    _regex, at = compact_string(data, at)
    assignment, at = _assignment(data, at)
    target, at = _assignment(data, at)
    if version >= 1:
        at += 1  # the member type (a classic or a consumer member)
    member = GroupMember(member_id or "", client_id or "", host or "", instance_id, assignment, target)
    return member, skip_tags(data, at)


def _assignment(data: bytes, at: int) -> tuple[MemberAssignment, int]:
    """An Assignment struct: its topics (id, name, partitions) and tagged fields."""
    topics, at = uvarint(data, at)
    partitions: list[AssignedPartition] = []
    for _ in range(topics - 1):
        topic, at = compact_string(data, at + 16)  # after the topic id
        count, at = uvarint(data, at)
        if count > 1:
            partitions.extend(AssignedPartition(topic or "", p) for p in struct.unpack_from(f">{count - 1}i", data, at))
            at += 4 * (count - 1)
        at = skip_tags(data, at)
    return MemberAssignment(partitions), skip_tags(data, at)
