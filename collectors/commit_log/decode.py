"""Decode the records of Kafka's `__consumer_offsets` topic (pure functions, no I/O).

The group coordinator writes two kinds of record there, told apart by the key's version:

- key v0/v1 (OffsetCommitKey: group, topic, partition) with an OffsetCommitValue: one offset
  commit. Value v0 (offset, metadata, commit time), v1 (+ expire time; written when the commit
  asked for a retention time), v2 (v0's fields), v3 (+ leader epoch; what Kafka 2.1+ writes),
  v4 (v3's fields as a flexible version: compact strings and tagged fields);
- key v2 (GroupMetadataKey: group) with a GroupMetadataValue v0–v4: the group's protocol
  type, generation, protocol, leader and members (member id, group instance id, client id,
  host, timeouts, subscription and assignment bytes).

A record without a value is a tombstone: the offset was deleted (expired, or the group was
deleted) or, for a group key, the group itself was deleted. Key versions 3 and up are the
records of the group types Kafka 4 added (KIP-848 consumer groups, share groups, streams
groups); they are reported as :data:`OTHER` here and decoded by :mod:`collectors.commit_log.records`.

The offset-commit path is the hot one (every commit of every group in the cluster passes
here), so it unpacks fixed-width fields with precompiled ``struct`` formats instead of a
general schema walker. Fields are big-endian, as everywhere in the Kafka protocol.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

#: What a key decodes to.
OFFSET_COMMIT, GROUP_METADATA, OTHER = 0, 1, 2

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_OFFSET_V0 = struct.Struct(">hq")  # version, offset (v0, v1, v2)
_OFFSET_V3 = struct.Struct(">hqi")  # version, offset, leader epoch (v3, v4)
_OFFSET_V3_HEAD = struct.Struct(">hqih")  # v3 up to the metadata's length


class CommitLogDecodeError(ValueError):
    """A record that does not follow the schema its version announces."""


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """One OffsetCommitValue; `expire_ts` is -1 unless the commit set a retention (v1)."""

    offset: int
    commit_ts: int
    metadata: str
    leader_epoch: int = -1
    expire_ts: int = -1
    version: int = 3


@dataclass(frozen=True, slots=True)
class Member:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    #: (topic, partition) pairs this member was assigned (the "consumer" protocol's assignment).
    assignment: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """One GroupMetadataValue: an empty `members` with generation > 0 is an Empty group."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_ts: int
    members: tuple[Member, ...] = field(default_factory=tuple)
    version: int = 3


def decode_key(key: bytes) -> tuple[int, str, str, int]:
    """(kind, group, topic, partition): topic "" and partition -1 for a group metadata key."""
    try:
        version = _I16.unpack_from(key)[0]
        if version <= 1:
            group_len = _I16.unpack_from(key, 2)[0]
            group_end = 4 + group_len
            topic_len = _I16.unpack_from(key, group_end)[0]
            topic_end = group_end + 2 + topic_len
            partition = _I32.unpack_from(key, topic_end)[0]
            return (
                OFFSET_COMMIT,
                key[4:group_end].decode(),
                key[group_end + 2 : topic_end].decode(),
                partition,
            )
        if version == 2:
            group_len = _I16.unpack_from(key, 2)[0]
            return GROUP_METADATA, key[4 : 4 + group_len].decode(), "", -1
    except (struct.error, UnicodeDecodeError) as exc:
        raise CommitLogDecodeError(f"commit log key {key[:64]!r}: {exc}") from exc
    return OTHER, "", "", -1


def decode_offset_commit(value: bytes) -> OffsetCommit:
    """An OffsetCommitValue of any version Kafka writes (v0–v4)."""
    try:
        version = _I16.unpack_from(value)[0]
        if version >= 3:
            _, offset, leader_epoch = _OFFSET_V3.unpack_from(value)
            reader = Reader(value, 14, flexible=version >= 4)
            metadata = reader.string()
            return OffsetCommit(offset, reader.i64(), metadata, leader_epoch, -1, version)
        offset = _OFFSET_V0.unpack_from(value)[1]
        reader = Reader(value, 10, flexible=False)
        metadata = reader.string()
        commit_ts = reader.i64()
        expire_ts = reader.i64() if version == 1 else -1
        return OffsetCommit(offset, commit_ts, metadata, -1, expire_ts, version)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CommitLogDecodeError(f"offset commit value {value[:64]!r}: {exc}") from exc


def commit_offset_and_time(value: bytes) -> tuple[int, int]:
    """(offset, commit ts) of an OffsetCommitValue: the per-commit hot path. v3 (what Kafka 3
    writes) and v4 with metadata under 127 bytes (Kafka 4) in one unpack and no object; other
    versions through :func:`decode_offset_commit`."""
    try:
        version, offset, _, metadata_len = _OFFSET_V3_HEAD.unpack_from(value)
        if version == 3 and metadata_len >= 0:
            return offset, _I64.unpack_from(value, 16 + metadata_len)[0]
        if version == 4 and 0 < value[14] < 0x80:  # what Kafka 4 writes: a one-byte compact metadata length
            return offset, _I64.unpack_from(value, 14 + value[14])[0]
    except struct.error as exc:
        raise CommitLogDecodeError(f"offset commit value {value[:64]!r}: {exc}") from exc
    commit = decode_offset_commit(value)
    return commit.offset, commit.commit_ts


def decode_group_metadata(value: bytes) -> GroupMetadata:
    """A GroupMetadataValue of any version (v0–v4); assignments decoded for the consumer protocol."""
    try:
        version = _I16.unpack_from(value)[0]
        reader = Reader(value, 2, flexible=version >= 4)
        protocol_type = reader.string()
        generation = reader.i32()
        protocol = reader.nullable_string()
        leader = reader.nullable_string()
        state_ts = reader.i64() if version >= 2 else -1
        members = tuple(_member(reader, version, protocol_type) for _ in range(reader.array_length()))
        return GroupMetadata(protocol_type, generation, protocol, leader, state_ts, members, version)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise CommitLogDecodeError(f"group metadata value {value[:64]!r}: {exc}") from exc


def _member(reader: Reader, version: int, protocol_type: str) -> Member:
    member_id = reader.string()
    instance_id = reader.nullable_string() if version >= 3 else None
    client_id = reader.string()
    client_host = reader.string()
    rebalance_timeout = reader.i32() if version >= 1 else -1
    session_timeout = reader.i32()
    reader.bytes()  # subscription
    assignment = reader.bytes()
    reader.skip_tagged_fields()
    owned = decode_consumer_assignment(assignment) if protocol_type == "consumer" and assignment else ()
    return Member(member_id, client_id, client_host, instance_id, session_timeout, rebalance_timeout, owned)


def decode_consumer_assignment(data: bytes) -> tuple[tuple[str, int], ...]:
    """ConsumerProtocolAssignment (any version): the (topic, partition) pairs; user data ignored."""
    reader = Reader(data, 2, flexible=False)  # not flexible in any version Kafka 3.x writes
    owned: list[tuple[str, int]] = []
    for _ in range(reader.array_length()):
        topic = reader.string()
        owned.extend((topic, reader.i32()) for _ in range(reader.array_length()))
    return tuple(owned)


class Reader:
    """Sequential reader for the general (slow-path) fields, classic or flexible encoding."""

    __slots__ = ("data", "flexible", "pos")

    def __init__(self, data: bytes, pos: int, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, pos, flexible

    def i32(self) -> int:
        value = _I32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return value

    def i64(self) -> int:
        value = _I64.unpack_from(self.data, self.pos)[0]
        self.pos += 8
        return value

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def _length(self) -> int:
        """-1 for null; compact lengths are stored plus one."""
        if self.flexible:
            return self.uvarint() - 1
        value = _I16.unpack_from(self.data, self.pos)[0]
        self.pos += 2
        return value

    def nullable_string(self) -> str | None:
        length = self._length()
        if length < 0:
            return None
        end = self.pos + length
        if end > len(self.data):
            raise IndexError(f"string of {length} bytes runs past the record")
        text = self.data[self.pos : end].decode()
        self.pos = end
        return text

    def string(self) -> str:
        return self.nullable_string() or ""

    def i8(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value - 256 if value > 127 else value

    def uuid(self) -> bytes:
        """A Uuid's 16 bytes (most significant first), as Kafka writes topic ids."""
        value = self.data[self.pos : self.pos + 16]
        if len(value) != 16:
            raise IndexError("uuid runs past the record")
        self.pos += 16
        return value

    def bytes(self) -> bytes:
        length = self.uvarint() - 1 if self.flexible else self.i32()
        if length < 0:
            return b""
        value = self.data[self.pos : self.pos + length]
        self.pos += length
        return value

    def array_length(self) -> int:
        length = self.uvarint() - 1 if self.flexible else self.i32()
        return max(0, length)

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            size = self.uvarint()  # read before moving: `pos += uvarint()` would lose the size's bytes
            self.pos += size
