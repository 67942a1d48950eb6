"""The share-group requests against bytes laid out by hand from Kafka 4.3's message schemas
(clients/src/main/resources/common/message/*.json in the broker's kafka-clients jar)."""

from __future__ import annotations

import uuid

import pytest

from collectors.kafka_protocol.api_versions import decode_api_versions, encode_api_versions
from collectors.kafka_protocol.wire import BrokerError, Reader, error_name
from collectors.share_groups.requests import (
    ListedGroup,
    ShareGroupDescription,
    ShareGroupOffsets,
    ShareMember,
    SharePartitionOffset,
    decode_describe_share_group_offsets,
    decode_list_groups,
    decode_share_group_describe,
    encode_describe_share_group_offsets,
    encode_list_groups,
    encode_share_group_describe,
)

TOPIC_ID = uuid.UUID("00112233445566778899aabbccddeeff")


def _hex(*parts: str) -> Reader:
    return Reader(bytes.fromhex("".join(parts)))


def test_api_versions_v3_request_and_response() -> None:
    assert encode_api_versions("lw", "1").hex() == "036c77023100"
    reader = _hex(
        "0000",  # error code
        "03",  # 2 api keys
        "00100000000500",  # ListGroups 0-5, no tags
        "005a0000000100",  # DescribeShareGroupOffsets 0-1
        "00000000",  # throttle time
        "0100020000",  # one tagged field (SupportedFeatures, 2 bytes), skipped
    )
    assert decode_api_versions(reader) == {16: (0, 5), 90: (0, 1)}
    assert reader.remaining == 0


def test_api_versions_error_is_raised_by_name() -> None:
    with pytest.raises(BrokerError, match="ApiVersions: UNSUPPORTED_VERSION"):
        decode_api_versions(_hex("0023", "01", "00000000", "00"))


def test_list_groups_v5_asks_for_share_groups_in_every_state() -> None:
    assert encode_list_groups(["share"]).hex() == "010206736861726500"


def test_list_groups_v5_response() -> None:
    reader = _hex(
        "000000000000",  # throttle, error code
        "02",  # one group
        "036731",  # group id "g1"
        "01",  # protocol type ""
        "07537461626c65",  # state "Stable"
        "067368617265",  # type "share"
        "00",  # group tags
        "00",  # body tags
    )
    assert decode_list_groups(reader) == [ListedGroup("g1", "Stable", "share")]
    assert reader.remaining == 0


def test_list_groups_error() -> None:
    with pytest.raises(BrokerError, match="ListGroups: COORDINATOR_LOAD_IN_PROGRESS"):
        decode_list_groups(_hex("00000000", "000e", "01", "00"))


def test_share_group_describe_v1_request() -> None:
    assert encode_share_group_describe(["g1", "g2"]).hex() == "030367310367320000"


def _member(member_id: str, client: str, partitions: str) -> str:
    return "".join(
        [
            f"{len(member_id) + 1:02x}" + member_id.encode().hex(),
            "00",  # rack id null
            "00000005",  # member epoch
            f"{len(client) + 1:02x}" + client.encode().hex(),
            "0b" + b"/127.0.0.1".hex(),  # client host
            "020274",  # subscribed topic names ["t"]
            "02",  # Assignment.TopicPartitions: one topic
            TOPIC_ID.hex,
            "0274",  # topic name "t"
            partitions,
            "00",  # TopicPartitions tags
            "00",  # Assignment tags
            "00",  # member tags
        ]
    )


def test_share_group_describe_v1_response_with_two_members_and_a_failed_group() -> None:
    reader = _hex(
        "00000000",  # throttle
        "03",  # two groups
        # group 1: no error
        "000000",  # error code, error message null
        "036731",  # group id
        "07537461626c65",  # state "Stable"
        "0000000900000009",  # group epoch, assignment epoch
        "0773696d706c65",  # assignor "simple"
        "03",  # two members
        _member("m-b", "c2", "0200000000"),  # partition 0
        _member("m-a", "c1", "030000000100000000"),  # partitions 1 and 0
        "80000000",  # authorized operations
        "00",  # group tags
        # group 2: GROUP_ID_NOT_FOUND with a message
        "004504676f6e",  # 69, "gon"
        "036732",
        "01",  # state ""
        "0000000000000000",
        "01",  # assignor ""
        "01",  # no members
        "80000000",
        "00",
        "00",  # body tags
    )
    described = decode_share_group_describe(reader)
    assert reader.remaining == 0
    assert described == [
        ShareGroupDescription(
            "g1", 0, None, "Stable", 9,
            (ShareMember("m-b", "c2", "/127.0.0.1", 5, (("t", 0),)),
             ShareMember("m-a", "c1", "/127.0.0.1", 5, (("t", 0), ("t", 1)))),
        ),
        ShareGroupDescription("g2", 69, "gon", "", 0, ()),
    ]  # fmt: skip


def test_describe_share_group_offsets_asks_for_all_topics_with_a_null_array() -> None:
    assert encode_describe_share_group_offsets(["g1"]).hex() == "02036731000000"


def _offsets_response(lag: str) -> Reader:
    return _hex(
        "00000000",  # throttle
        "02",  # one group
        "036731",
        "02",  # one topic
        "0274",
        TOPIC_ID.hex,
        "03",  # two partitions
        "00000000000000000000012c00000000",  # partition 0, start 300, leader epoch 0
        lag,  # v1 only: lag
        "00000000",  # no error, message null, tags
        "00000001ffffffffffffffff00000000",  # partition 1: no start offset yet
        lag,
        "00000000",
        "00",  # topic tags
        "00000000",  # group error 0, message null, tags
        "00",  # body tags
    )


def test_describe_share_group_offsets_v1_carries_the_lag() -> None:
    reader = _offsets_response("00000000000001f4")  # 500
    assert decode_describe_share_group_offsets(reader, 1) == [
        ShareGroupOffsets(
            "g1", 0, None, (SharePartitionOffset("t", 0, 300, 500), SharePartitionOffset("t", 1, -1, 500))
        )
    ]
    assert reader.remaining == 0


def test_describe_share_group_offsets_without_a_lag_says_none() -> None:
    v0 = decode_describe_share_group_offsets(_offsets_response(""), 0)
    unknown = decode_describe_share_group_offsets(_offsets_response("ffffffffffffffff"), 1)
    assert [p.lag for p in v0[0].partitions] == [None, None]
    assert [p.lag for p in unknown[0].partitions] == [None, None]


def test_error_codes_have_kafkas_names() -> None:
    assert error_name(16) == "NOT_COORDINATOR"
    assert error_name(69) == "GROUP_ID_NOT_FOUND"
    assert error_name(9999) == "error 9999"
