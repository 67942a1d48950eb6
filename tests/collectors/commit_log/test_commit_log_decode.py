"""Record versions a Kafka 3.8 broker does not write but a retained commit log may hold (v0 and
v2 values from brokers before 2.1) or a newer coordinator writes (flexible v4), built byte by
byte from Kafka's own message schemas. The versions 3.8 writes are tested on its real records
in test_commit_log.py."""

from __future__ import annotations

import struct

import pytest

from collectors.commit_log.decode import (
    OTHER,
    CommitLogDecodeError,
    commit_offset_and_time,
    decode_consumer_assignment,
    decode_group_metadata,
    decode_key,
    decode_offset_commit,
)


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def compact(text: str) -> bytes:
    return bytes([len(text) + 1]) + text.encode()  # uvarint length + 1 (short strings: one byte)


def test_offset_commit_value_v0_and_v2():
    v0 = struct.pack(">hq", 0, 42) + string("meta") + struct.pack(">q", 1_600_000_000_000)
    v2 = struct.pack(">hq", 2, 43) + string("") + struct.pack(">q", 1_600_000_000_001)
    assert decode_offset_commit(v0).offset == 42 and decode_offset_commit(v0).metadata == "meta"
    assert commit_offset_and_time(v0) == (42, 1_600_000_000_000)
    assert commit_offset_and_time(v2) == (43, 1_600_000_000_001)


def test_flexible_offset_commit_value_v4_skips_tagged_fields():
    v4 = struct.pack(">hqi", 4, 44, 9) + compact("m") + struct.pack(">q", 1_600_000_000_002) + b"\x00"
    commit = decode_offset_commit(v4)
    assert (commit.version, commit.offset, commit.leader_epoch, commit.metadata) == (4, 44, 9, "m")
    assert commit_offset_and_time(v4) == (44, 1_600_000_000_002)


def test_flexible_group_metadata_v4_with_a_member_and_its_assignment():
    assignment = struct.pack(">h", 3) + struct.pack(">i", 1) + string("t") + struct.pack(">iii", 2, 0, 5)
    assignment += struct.pack(">i", -1)  # no user data
    member = (
        compact("member-1") + b"\x00" + compact("client-1") + compact("/10.0.0.1")  # instance id null
        + struct.pack(">ii", 300_000, 45_000) + bytes([1]) + bytes([len(assignment) + 1]) + assignment + b"\x00"
    )  # fmt: skip
    value = (
        struct.pack(">h", 4) + compact("consumer") + struct.pack(">i", 7) + compact("range") + compact("member-1")
        + struct.pack(">q", 1_600_000_000_003) + bytes([2]) + member + b"\x00"
    )  # fmt: skip
    group = decode_group_metadata(value)
    assert (group.version, group.protocol_type, group.generation, group.protocol, group.leader) == (
        4, "consumer", 7, "range", "member-1",
    )  # fmt: skip
    (only,) = group.members
    assert (only.member_id, only.client_id, only.client_host, only.group_instance_id) == (
        "member-1", "client-1", "/10.0.0.1", None,
    )  # fmt: skip
    assert (only.rebalance_timeout_ms, only.session_timeout_ms) == (300_000, 45_000)
    assert only.assignment == (("t", 0), ("t", 5)) == decode_consumer_assignment(assignment)


def test_new_protocol_keys_are_other_and_garbage_names_the_record():
    assert decode_key(struct.pack(">h", 5) + string("g"))[0] == OTHER
    with pytest.raises(CommitLogDecodeError, match="offset commit value"):
        decode_offset_commit(struct.pack(">hq", 3, 1))
    with pytest.raises(CommitLogDecodeError, match="commit log key"):
        decode_key(struct.pack(">hh", 1, 40) + b"short")
