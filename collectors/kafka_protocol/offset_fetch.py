"""OffsetFetch v8 and v9 (KIP-709, Kafka 3.0+), encoded and decoded: many groups' committed
offsets in one request.

Why: confluent-kafka sends one OffsetFetch per group, and librdkafka's handling of those
thousands of requests costs more CPU per cycle than everything else the collector does.
Field by field as Apache Kafka's OffsetFetchRequest.json / OffsetFetchResponse.json have them
(common/message/ in the broker's kafka-clients jar):

- v8: a list of groups, each with its topics (null: every topic the group committed on);
  RequireStable; per group an error code, per partition the committed offset, leader epoch,
  metadata and error code.
- v9 (KIP-848) adds each group's MemberId and MemberEpoch: sent as null and -1, an admin's
  read outside the group.
- v10 (Kafka 4.1+) names topics by id only, so it is not sent: Kafka 3.8 speaks v0-v9, 4.x v1-v10.

The response of a large cluster holds one entry per committed partition of every group, so it
is decoded in one pass with struct.unpack_from rather than a Reader call per field.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from collectors.kafka_protocol.packed_decode import compact_string, decode_whole, skip_tags, uvarint
from collectors.kafka_protocol.wire import ProtocolError, Reader, Writer

OFFSET_FETCH = 9
#: The versions Lagwatch speaks (groups by the list, topics by name), oldest first.
OFFSET_FETCH_VERSIONS = (8, 9)
#: What the broker writes for a partition without a committed offset.
NO_OFFSET = -1

_PARTITION = struct.Struct(">iqi")  # index, committed offset, committed leader epoch
_INT16 = struct.Struct(">h")


@dataclass(slots=True)
class CommittedOffset:
    """One partition's committed offset as a group committed it; `error` as librdkafka would give it."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error: KafkaError | None = None


@dataclass(slots=True)
class FetchedGroup:
    """One group's answer: its error code (0: none) and committed partitions."""

    group_id: str
    error_code: int
    partitions: list[CommittedOffset] = field(default_factory=list)


def encode_offset_fetch(group_ids: Sequence[str], version: int, require_stable: bool = False) -> bytes:
    """Every topic of each group (null topics), as an admin reads them (no member id, epoch -1)."""

    def group(writer: Writer, group_id: str) -> None:
        writer.compact_string(group_id)
        if version >= 9:
            writer.compact_string(None).int32(-1)  # MemberId, MemberEpoch
        writer.compact_array(None, Writer.compact_string).tagged_fields()  # Topics: all

    return Writer().compact_array(list(group_ids), group).boolean(require_stable).tagged_fields().bytes()


def decode_offset_fetch(reader: Reader) -> list[FetchedGroup]:
    """The groups of a v8 or v9 response (both answer alike); bytes that do not parse: a :class:`ProtocolError`."""
    return decode_whole(reader, "OffsetFetch", _groups)


def _groups(data: bytes, at: int) -> tuple[list[FetchedGroup], int]:
    count, at = uvarint(data, at)
    groups = []
    for _ in range(count - 1):
        group_id, at = compact_string(data, at)
        if group_id is None:
            raise ProtocolError("OffsetFetch response: a group without an id")
        partitions: list[CommittedOffset] = []
        topics, at = uvarint(data, at)
        for _ in range(topics - 1):
            at = _topic_partitions(data, at, partitions)
        (error_code,) = _INT16.unpack_from(data, at)
        groups.append(FetchedGroup(group_id, error_code, partitions))
        at = skip_tags(data, at + 2)
    return groups, at


def _topic_partitions(data: bytes, at: int, into: list[CommittedOffset]) -> int:
    """One topic's partitions appended to `into`; the position after the topic."""
    topic, at = compact_string(data, at)
    if topic is None:
        raise ProtocolError("OffsetFetch response: a topic without a name")
    count, at = uvarint(data, at)
    unpack_partition, unpack_int16, append = _PARTITION.unpack_from, _INT16.unpack_from, into.append
    for _ in range(count - 1):
        index, offset, epoch = unpack_partition(data, at)
        at += 16
        size = data[at]
        if size < 2:  # null (0) or empty (1) metadata, the usual: one byte
            metadata, at = (None if size == 0 else ""), at + 1
        else:
            metadata, at = compact_string(data, at)
        (error_code,) = unpack_int16(data, at)
        at = skip_tags(data, at + 2)
        append(CommittedOffset(topic, index, offset, epoch, metadata, KafkaError(error_code) if error_code else None))
    return skip_tags(data, at)
