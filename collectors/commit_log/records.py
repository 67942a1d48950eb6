"""Decode the group records Kafka 4 writes to `__consumer_offsets` (pure functions, no I/O).

Since KIP-848 the key's leading int16 is the record type (the schema's ``apiKey``), not a key
version: 0–1 offset commits and 2 classic group metadata (:mod:`collectors.commit_log.decode`),
and from 3 up one record per fact of a consumer, share or streams group. Every key of type 3
and up is ``GroupId`` and, for per-member records, ``MemberId`` (non-flexible strings). Values
start with their own int16 version (0 for every type Kafka 4.3 writes) and are flexible
(compact strings and arrays, tagged fields). Record types and schemas: Kafka's
group-coordinator/src/main/resources/common/message/*Key.json and *Value.json.

Decoded, because together they tell a consumer group's membership as it changes
(:mod:`collectors.commit_log.groups`): the group epoch (ConsumerGroupMetadata), each member's
client id and host (ConsumerGroupMemberMetadata), the target assignment's epoch
(ConsumerGroupTargetAssignmentMetadata), each member's target assignment
(ConsumerGroupTargetAssignmentMember: what it will own once reconciled) and each member's current
assignment, epoch and state (ConsumerGroupCurrentMemberAssignment). A tombstone (no value) removes the fact: a member's
three tombstones mean it left. The other types are named in :data:`SKIPPED` with the reason.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from collectors.commit_log.decode import CommitLogDecodeError, Reader

_I16 = struct.Struct(">h")

#: Every record type Kafka 4.3's group coordinator writes (9 and 18 were share and streams
#: partition metadata, no longer written; a retained log may still hold them: skipped).
RECORD_TYPES: dict[int, str] = {
    0: "LegacyOffsetCommit",
    1: "OffsetCommit",
    2: "GroupMetadata",
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata",
    10: "ShareGroupMemberMetadata",
    11: "ShareGroupMetadata",
    12: "ShareGroupTargetAssignmentMetadata",
    13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment",
    15: "ShareGroupStatePartitionMetadata",
    16: "ConsumerGroupRegularExpression",
    17: "StreamsGroupMetadata",
    18: "StreamsGroupPartitionMetadata",
    19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment",
    23: "StreamsGroupTopology",
}
(
    CONSUMER_GROUP_METADATA,
    CONSUMER_MEMBER_METADATA,
    CONSUMER_TARGET_METADATA,
    CONSUMER_TARGET_MEMBER,
    CONSUMER_CURRENT_ASSIGNMENT,
) = (3, 5, 6, 7, 8)
#: The types decoded, with the one value version each that Kafka 4.3 writes.
DECODED: dict[int, int] = {
    CONSUMER_GROUP_METADATA: 0,
    CONSUMER_MEMBER_METADATA: 0,
    CONSUMER_TARGET_METADATA: 0,
    CONSUMER_TARGET_MEMBER: 0,
    CONSUMER_CURRENT_ASSIGNMENT: 0,
}
_SHARE = "share group: no committed offsets here (its progress is in __share_group_state)"
_STREAMS = "streams group: its members and tasks are not judged from the log"
#: Why each other record type is skipped (counted per type, logged once).
SKIPPED: dict[int, str] = {
    4: "subscribed topics' metadata, no membership",
    9: _SHARE,
    10: _SHARE,
    11: _SHARE,
    12: _SHARE,
    13: _SHARE,
    14: _SHARE,
    15: _SHARE,
    16: "resolved regular-expression subscription, no membership",
    17: _STREAMS,
    18: _STREAMS,
    19: _STREAMS,
    20: _STREAMS,
    21: _STREAMS,
    22: _STREAMS,
    23: _STREAMS,
}
#: A member's state in its current assignment (Kafka's MemberState): only STABLE is reconciled.
MEMBER_STABLE = 0


def record_type_name(record_type: int) -> str:
    return RECORD_TYPES.get(record_type, f"unknown record type {record_type}")


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """ConsumerGroupMemberMetadataValue: who the member is (the subscription is not kept)."""

    client_id: str
    client_host: str
    instance_id: str | None


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    """ConsumerGroupCurrentMemberAssignmentValue: what the member owns now, by topic id."""

    member_epoch: int
    state: int
    #: (topic id, partition) pairs assigned to (owned by) the member
    partitions: tuple[tuple[bytes, int], ...]
    #: (topic id, partition) pairs it must still revoke
    pending_revocation: tuple[tuple[bytes, int], ...] = ()


def decode_group_key(key: bytes) -> tuple[int, str, str | None]:
    """(record type, group id, member id or None) of a key of type 3 and up."""
    try:
        record_type = _I16.unpack_from(key)[0]
        reader = Reader(key, 2, flexible=False)
        group = reader.string()
        member = reader.string() if reader.pos < len(key) else None
        return record_type, group, member
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CommitLogDecodeError(f"group record key {key[:64]!r}: {exc}") from exc


def value_version(value: bytes) -> int:
    try:
        return _I16.unpack_from(value)[0]
    except struct.error as exc:
        raise CommitLogDecodeError(f"record value {value[:64]!r}: {exc}") from exc


def decode_epoch(value: bytes) -> int:
    """The leading int32 epoch of ConsumerGroupMetadataValue (group epoch) and
    ConsumerGroupTargetAssignmentMetadataValue (assignment epoch); tagged fields ignored."""
    try:
        return struct.unpack_from(">i", value, 2)[0]
    except struct.error as exc:
        raise CommitLogDecodeError(f"epoch value {value[:64]!r}: {exc}") from exc


def decode_member_metadata(value: bytes) -> MemberMetadata:
    try:
        reader = Reader(value, 2, flexible=True)
        instance_id = reader.nullable_string()
        reader.nullable_string()  # rack id
        return MemberMetadata(reader.string(), reader.string(), instance_id)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CommitLogDecodeError(f"member metadata value {value[:64]!r}: {exc}") from exc


def decode_current_assignment(value: bytes) -> CurrentAssignment:
    try:
        reader = Reader(value, 2, flexible=True)
        member_epoch = reader.i32()
        reader.i32()  # previous member epoch
        state = reader.i8()
        assigned = _topic_partitions(reader)
        pending = _topic_partitions(reader)
        return CurrentAssignment(member_epoch, state, assigned, pending)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CommitLogDecodeError(f"current assignment value {value[:64]!r}: {exc}") from exc


def decode_target_member(value: bytes) -> tuple[tuple[bytes, int], ...]:
    """ConsumerGroupTargetAssignmentMemberValue: the (topic id, partition) pairs the member is to own."""
    try:
        return _topic_partitions(Reader(value, 2, flexible=True))
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CommitLogDecodeError(f"target assignment member value {value[:64]!r}: {exc}") from exc


def _topic_partitions(reader: Reader) -> tuple[tuple[bytes, int], ...]:
    """A compact array of (TopicId, [Partitions], tagged AssignmentEpochs) structs, flattened."""
    pairs: list[tuple[bytes, int]] = []
    for _ in range(reader.array_length()):
        topic_id = reader.uuid()
        pairs.extend((topic_id, reader.i32()) for _ in range(reader.array_length()))
        reader.skip_tagged_fields()
    return tuple(pairs)
