"""Kafka 4's group records, decoded from bytes a real Kafka 4.3.1 broker wrote to `__consumer_offsets`
(commit_log_4_3_1_records.json: a classic group, a KIP-848 group, a classic group converted offline
and one converted online by a KIP-848 member joining, and a share group; each joining, committing and
leaving; then two groups deleted). The live broker is in test_commit_log_membership.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from collectors.commit_log.decode import (
    GROUP_METADATA,
    OFFSET_COMMIT,
    commit_offset_and_time,
    decode_group_metadata,
    decode_key,
    decode_offset_commit,
)
from collectors.commit_log.groups import GroupBook
from collectors.commit_log.records import (
    DECODED,
    SKIPPED,
    decode_current_assignment,
    decode_group_key,
    decode_member_metadata,
    decode_target_member,
    record_type_name,
)

RECORDS = json.loads((Path(__file__).parent / "commit_log_4_3_1_records.json").read_text())
TOPIC_ID = bytes.fromhex("26d633812cd3444d8fbd8f028ccd63cc")  # topic "t" on that broker


def records() -> list[tuple[int, bytes, bytes | None]]:
    """(ts, key, value) in the order the coordinator wrote them (per group: one partition)."""
    ordered = sorted(RECORDS, key=lambda r: (r["ts"], r["partition"], r["offset"]))
    return [(r["ts"], bytes.fromhex(r["key"]), bytes.fromhex(r["value"]) if r["value"] else None) for r in ordered]


def test_every_record_type_4_3_1_wrote_is_decoded_or_skipped_with_a_reason():
    types = Counter(int.from_bytes(key[:2], "big") for _, key, _ in records())
    found = {record_type_name(t) for t in types}
    assert found == {
        "OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata", "ConsumerGroupPartitionMetadata",
        "ConsumerGroupMemberMetadata", "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupCurrentMemberAssignment", "ShareGroupMemberMetadata", "ShareGroupMetadata",
        "ShareGroupTargetAssignmentMetadata", "ShareGroupTargetAssignmentMember", "ShareGroupCurrentMemberAssignment",
        "ShareGroupStatePartitionMetadata",
    }  # fmt: skip
    assert all(t in (0, 1, 2) or t in DECODED or t in SKIPPED for t in types)


def test_each_decoded_value_reads_what_the_broker_wrote():
    members, assignments = [], []
    for _, key, value in records():
        kind, record_type = decode_key(key)[0], int.from_bytes(key[:2], "big")
        if value is None:
            continue
        if kind == OFFSET_COMMIT:
            commit = decode_offset_commit(value)
            assert commit.version == 4
            assert commit_offset_and_time(value) == (commit.offset, commit.commit_ts)  # the v4 fast path agrees
        elif kind == GROUP_METADATA:
            assert decode_group_metadata(value).version == 3
        elif record_type == 5:
            members.append(decode_member_metadata(value))
        elif record_type == 8:
            assignments.append(decode_current_assignment(value))
    assert {m.client_id for m in members} == {"ka", "kb", "conv", "oc", "ok"}
    assert {m.client_host for m in members} == {"/127.0.0.1"}
    assert {tp for a in assignments for tp in a.partitions} == {(TOPIC_ID, 0), (TOPIC_ID, 1)}
    assert any(a.pending_revocation for a in assignments)  # a partition moving: revoked first
    assert decode_group_key(bytes.fromhex("0003000867726f75702d6964")) == (3, "group-id", None)


def test_membership_changes_replayed_from_the_records():
    book = GroupBook({TOPIC_ID: "t"}.get)
    seen = []
    batch: list[tuple[int, bytes, bytes | None]] = []
    for ts, key, value in records():
        if batch and batch[-1][0] != ts:  # records the coordinator appended together: one batch
            seen.extend(_apply(book, batch))
            batch = []
        batch.append((ts, key, value))
    seen.extend(_apply(book, batch))
    by_group: dict[str, list[tuple[str, str, int, list[str]]]] = {}
    for change in seen:
        owners = sorted({client for _, _, _, client, _ in change.owners})
        by_group.setdefault(change.group_id, []).append((change.protocol, change.state, change.members, owners))
    assert by_group["classic-g"] == [
        ("classic", "Stable", 1, ["ca"]), ("classic", "Stable", 2, ["ca", "cb"]),
        ("classic", "Stable", 1, ["cb"]), ("classic", "Empty", 0, []),
    ]  # fmt: skip
    assert by_group["kip848-g"] == [
        ("consumer", "Stable", 1, ["ka"]), ("consumer", "Reconciling", 2, ["ka"]),
        ("consumer", "Reconciling", 2, ["ka"]),
        ("consumer", "Reconciling", 2, ["ka"]),  # ka reconciled to the new epoch (member epochs are changes too)
        ("consumer", "Stable", 2, ["ka", "kb"]),
        ("consumer", "Assigning", 1, ["kb"]), ("consumer", "Stable", 1, ["kb"]), ("consumer", "Empty", 0, []),
    ]  # fmt: skip
    # Converted to the consumer protocol: the classic tombstone is no Empty, no Dead in between.
    assert [c[1] for c in by_group["convert-g"]] == ["Stable", "Empty"]
    assert [c[:3] for c in by_group["online-g"]][:2] == [("classic", "Stable", 1), ("consumer", "Reconciling", 2)]
    assert by_group["online-g"][-1] == ("consumer", "Empty", 0, [])
    assert "share-g" not in by_group  # share groups are skipped


def test_epochs_and_partitions_assigned_but_not_yet_reconciled_replayed_from_the_records():
    """kb joins kip848-g: the group epoch moves to 3 and partition 1 is in kb's target assignment
    while ka still owns it (pending, named by kb) until ka revoked it and kb took it."""
    book = GroupBook({TOPIC_ID: "t"}.get)
    seen = [c for c in _replay(book) if c.group_id == "kip848-g"]
    story = [
        (c.state, c.epoch, sorted((m[1], m[3]) for m in c.member_epochs), sorted((p[1], p[3]) for p in c.pending))
        for c in seen
    ]
    assert story == [
        ("Stable", 2, [("ka", 2)], []),
        ("Reconciling", 3, [("ka", 2), ("kb", 3)], [(1, "kb")]),  # kb assigned p1, ka still owns it
        ("Reconciling", 3, [("ka", 2), ("kb", 3)], [(1, "kb")]),  # ka revoked p1: nobody owns it, still pending
        ("Reconciling", 3, [("ka", 3), ("kb", 3)], [(1, "kb")]),
        ("Stable", 3, [("ka", 3), ("kb", 3)], []),  # kb owns p1: reconciled
        ("Assigning", 4, [("kb", 3)], []),
        ("Stable", 4, [("kb", 4)], []),
        ("Empty", 5, [], []),
    ]
    assert all(p[0] == "t" and p[2] for c in seen for p in c.pending)  # topic named, member id set
    classic = [c for c in _replay(GroupBook({TOPIC_ID: "t"}.get)) if c.group_id == "classic-g"]
    assert {(c.epoch, c.member_epochs, c.pending) for c in classic} == {(None, (), ())}


def test_a_target_assignment_member_record_decodes_to_its_partitions():
    targets = [
        decode_target_member(value)
        for _, key, value in records()
        if value is not None and int.from_bytes(key[:2], "big") == 7
    ]
    assert targets and {tp for target in targets for tp in target} == {(TOPIC_ID, 0), (TOPIC_ID, 1)}


def _replay(book: GroupBook) -> list:
    seen, batch = [], []
    for ts, key, value in records():
        if batch and batch[-1][0] != ts:
            seen.extend(_apply(book, batch))
            batch = []
        batch.append((ts, key, value))
    return seen + _apply(book, batch)


def _apply(book: GroupBook, batch: list[tuple[int, bytes, bytes | None]]) -> list:
    for ts, key, value in batch:
        kind, group, _, _ = decode_key(key)
        if kind == GROUP_METADATA:
            book.classic(group, decode_group_metadata(value) if value else None, ts)
        elif kind != OFFSET_COMMIT:
            record_type, group, member = decode_group_key(key)
            if record_type in DECODED:
                book.consumer(record_type, group, member, value, ts)
    return book.changes()
