"""The rules that turn a share-group reading into samples (no broker needed)."""

from __future__ import annotations

from collectors.base import SampleFactory
from collectors.share_groups.reader import ShareGroupsRead
from collectors.share_groups.requests import ShareGroupDescription, ShareGroupOffsets, ShareMember, SharePartitionOffset
from collectors.share_groups.samples import share_group_samples
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE

MAKE = SampleFactory(cluster="test", collector="test-instance")
TS = 1_700_000_000_000


def _allowed(topic: str) -> bool:
    return topic != "hidden"


def _read() -> ShareGroupsRead:
    members = (
        ShareMember("m-b", "c2", "/h2", 3, (("t", 0), ("t", 1))),
        ShareMember("m-a", "c1", "/h1", 3, (("t", 0), ("hidden", 0))),
    )
    return ShareGroupsRead(
        descriptions={
            "sg": ShareGroupDescription("sg", 0, None, "Stable", 3, members),
            "gone": ShareGroupDescription("gone", 69, None, "Dead", 0, ()),
        },
        offsets={
            "sg": ShareGroupOffsets("sg", 0, None, (
                SharePartitionOffset("t", 0, 300, 700),
                SharePartitionOffset("t", 1, 5, None),  # the broker gave no lag
                SharePartitionOffset("t", 2, -1, 0),  # nothing delivered yet
                SharePartitionOffset("t", 3, 0, None, error_code=16),
                SharePartitionOffset("hidden", 0, 10, 1),
            )),
            "gone": ShareGroupOffsets("gone", 69, "not here", ()),
        },
        errors=["share groups on b2:9092: timed out"],
    )  # fmt: skip


def test_offsets_membership_and_errors_of_one_cycle() -> None:
    samples, errors = share_group_samples(_read(), _allowed, TS, MAKE)
    assert {s.ts for s in samples} == {TS} and {s.source for s in samples} == {"admin"}
    assert [(s.metric, s.group_id, s.topic, s.partition, s.value) for s in samples] == [
        ("consumer_group_state", "sg", None, None, GROUP_STATE_CODE["Stable"]),
        ("consumer_group_members", "sg", None, None, 2),
        ("consumer_group_type", "sg", None, None, GROUP_TYPE_CODE["share"]),
        ("partition_assigned", "sg", "t", 0, 1),
        ("partition_assigned", "sg", "t", 1, 1),
        ("share_start_offset", "sg", "t", 0, 300),
        ("share_group_lag", "sg", "t", 0, 700),
        ("share_start_offset", "sg", "t", 1, 5),
    ]
    assert errors == [
        "share groups on b2:9092: timed out",
        "share group gone: GROUP_ID_NOT_FOUND",
        "share group gone: GROUP_ID_NOT_FOUND (not here)",
        "share group sg t[3]: NOT_COORDINATOR",
    ]


def test_a_partition_shared_by_members_names_the_lowest_member_id() -> None:
    samples, _ = share_group_samples(_read(), _allowed, TS, MAKE)
    owners = {(s.topic, s.partition): (s.member_id, s.client_id, s.host) for s in samples
              if s.metric == "partition_assigned"}  # fmt: skip
    assert owners == {("t", 0): ("m-a", "c1", "/h1"), ("t", 1): ("m-b", "c2", "/h2")}


def test_a_share_state_lagwatch_does_not_know_is_unknown() -> None:
    read = ShareGroupsRead(descriptions={"sg": ShareGroupDescription("sg", 0, None, "NotAGroupState", 1, ())})
    samples, _ = share_group_samples(read, _allowed, TS, MAKE)
    assert [(s.metric, s.value) for s in samples] == [
        ("consumer_group_state", GROUP_STATE_CODE["Unknown"]),
        ("consumer_group_members", 0),
        ("consumer_group_type", GROUP_TYPE_CODE["share"]),
    ]
