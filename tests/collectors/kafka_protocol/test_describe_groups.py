"""Consumer groups described many per request (DescribeGroups v5/v6, ConsumerGroupDescribe v0/v1)
over Lagwatch's own protocol client, against what confluent-kafka's `describe_consumer_groups`
reads of the same groups: the same state and type codes, members, owned and target partitions.

On the real broker of the run (Kafka 4.3.1, or 3.8.0 in the compat run, where there are no
KIP-848 groups) and on the secured broker for a principal refused some groups. The assignment
tests use bytes written out by hand from ConsumerProtocolAssignment.json.
"""

from __future__ import annotations

import logging
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

from collectors.admin import protocol_choice
from collectors.admin.group_descriptions import GroupDescriber
from collectors.admin.group_visibility import refused
from collectors.admin.samples import (
    NameFilter,
    described_state_code,
    group_type_code,
    partition_owner_samples,
    partition_pending_samples,
)
from collectors.base import SampleFactory
from collectors.kafka_protocol import group_descriptions
from collectors.kafka_protocol.api_versions import api_versions
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.describe_groups import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    AssignedPartition,
    GroupDescription,
    MemberAssignment,
    decode_consumer_group_describe,
    decode_describe_groups,
    decode_member_assignment,
    group_state,
)
from collectors.kafka_protocol.find_coordinator import FIND_COORDINATOR
from collectors.kafka_protocol.group_descriptions import GroupDescriptions, Remembered, read_group_descriptions
from collectors.kafka_protocol.group_offsets import NotSpoken
from collectors.kafka_protocol.wire import ProtocolError, Reader, Writer
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from harness.secure_kafka import ADMIN_USER, MONITOR_SOME_GROUPS, VISIBLE_GROUP_PREFIX, SecureKafkaBroker
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE
from shell.broker import EmbeddedBroker
from tests.collectors.group_members import GroupMember, wait_for

#: What the samples read of a description: state code, type code, and per member its ids, owned and target partitions.
Summary = tuple[int | None, int | None, set[tuple[str, str, str, frozenset[Any], frozenset[Any] | None]]]


def plaintext_security(broker: RealKafkaBroker) -> tuple[ClientSecurity | None, str | None]:
    return ClientSecurity.or_reason("test", {"bootstrap.servers": broker.bootstrap_servers})


def summary(description: Any) -> Summary:
    """A description (either client's) as the admin collector's samples see it."""

    def partitions(assignment: Any) -> frozenset[tuple[str, int]] | None:
        if assignment is None:
            return None
        return frozenset((tp.topic, tp.partition) for tp in assignment.topic_partitions or [])

    members = {
        (m.member_id, m.client_id, m.host, partitions(m.assignment), partitions(getattr(m, "target_assignment", None)))
        for m in description.members or []
    }
    return described_state_code(description), group_type_code(description.type), members  # type: ignore[return-value]


def librdkafka_summaries(bootstrap: str, group_ids: list[str]) -> dict[str, Summary]:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answers are in
    futures = admin.describe_consumer_groups(group_ids, request_timeout=20)
    return {group_id: summary(future.result(timeout=30)) for group_id, future in futures.items()}


def brokers(broker: RealKafkaBroker) -> list[tuple[str, int]]:
    return [("127.0.0.1", broker.port)]


def speaks_consumer_group_describe(broker: RealKafkaBroker) -> bool:
    """Kafka 4 does; 3.8 too (the early-access KIP-848 API), with no consumer groups to describe."""
    with BrokerConnection("127.0.0.1", broker.port, "test", time.monotonic() + 10) as connection:
        return CONSUMER_GROUP_DESCRIBE in api_versions(connection, "0")


# -- the assignment bytes ----------------------------------------------------------------------------


def assignment_bytes(version: int, topics: list[tuple[str, list[int]]], user_data: bytes | None = None) -> bytes:
    """A ConsumerProtocol Assignment as a classic consumer's leader writes it (non-flexible)."""
    out = struct.pack(">hi", version, len(topics))
    for topic, partitions in topics:
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + (struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data)


def test_an_assignment_decodes_each_topics_partitions_whatever_its_version_and_user_data() -> None:
    for version in (0, 1, 3):
        data = assignment_bytes(version, [("orders", [0, 2]), ("päyments", [7])], b"sticky-user-data")
        assert decode_member_assignment(data) == [
            AssignedPartition("orders", 0), AssignedPartition("orders", 2), AssignedPartition("päyments", 7)
        ]  # fmt: skip
    assert decode_member_assignment(assignment_bytes(0, [])) == []
    assert decode_member_assignment(b"") == []  # a member still joining has no assignment yet


@pytest.mark.parametrize(
    "data",
    [
        assignment_bytes(0, [("orders", [0, 1])])[:-9],  # cut inside the partitions
        assignment_bytes(0, [("orders", [0])])[:9],  # cut inside the topic name
        struct.pack(">hi", 0, 3) + struct.pack(">h", 2) + b"ab",  # three topics announced, one half-written
        struct.pack(">hih", 0, 1, 2) + b"\xff\xfe" + struct.pack(">ii", 1, 0),  # a name that is not UTF-8
        struct.pack(">hihi", 0, 1, 0, -5),  # a negative partition count
        struct.pack(">h", -1),  # a negative version
        b"\x00",
    ],
)
def test_assignment_bytes_that_do_not_parse_own_nothing_known_never_raise(data: bytes) -> None:
    assert decode_member_assignment(data) == []


def test_states_are_named_as_librdkafka_names_them_and_the_rest_unknown() -> None:
    assert [group_state(s) for s in ("Stable", "stable", "Empty", "Dead", "PreparingRebalance")] == [
        ConsumerGroupState.STABLE, ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD,
        ConsumerGroupState.PREPARING_REBALANCING,
    ]  # fmt: skip
    assert group_state("CompletingRebalance") == ConsumerGroupState.COMPLETING_REBALANCING
    assert {group_state(s) for s in ("Assigning", "Reconciling", "", "NotAState")} == {ConsumerGroupState.UNKNOWN}


# -- the responses -------------------------------------------------------------------------------------


def w() -> Writer:
    return Writer()


def classic_member_bytes(member_id: str, client_id: str, assignment: bytes) -> bytes:
    member = w().compact_string(member_id).compact_string(None).compact_string(client_id).compact_string("/10.0.0.7")
    return member.compact_bytes(b"subscription").compact_bytes(assignment).tagged_fields().bytes()


def describe_groups_response(version: int, protocol_type: str, *members: bytes) -> bytes:
    group = w().int16(0)
    if version >= 6:
        group.compact_string(None)  # error message
    group.compact_string("g").compact_string("Stable").compact_string(protocol_type).compact_string("range")
    group.uvarint(len(members) + 1)
    end = w().int32(-1).uvarint(0).uvarint(0).bytes()  # authorized operations, group tags, response tags
    return w().int32(0).uvarint(2).bytes() + group.bytes() + b"".join(members) + end


def topic_partitions_bytes(topic: str, *partitions: int) -> bytes:
    rest = w().compact_string(topic).compact_array(list(partitions), Writer.int32).tagged_fields()
    return uuid.uuid4().bytes + rest.bytes()


def consumer_group_describe_response(version: int, owned: bytes, target: bytes) -> bytes:
    group = w().int16(0).compact_string(None).compact_string("k").compact_string("Reconciling").int32(3).int32(3)
    group.compact_string("uniform").uvarint(2)  # one member
    member = w().compact_string("m-1").compact_string("static-1").compact_string(None).int32(2)
    member.compact_string("client-1").compact_string("/10.0.0.8").compact_array(["t"], Writer.compact_string)
    member.compact_string(None)  # subscribed regex
    assignments = w().uvarint(2).bytes() + owned + w().uvarint(0).uvarint(2).bytes() + target + w().uvarint(0).bytes()
    tail = (w().int8(1) if version >= 1 else w()).uvarint(0).bytes()  # member type (v1), member tags
    end = w().int32(-1).uvarint(0).uvarint(0).bytes()  # authorized operations, group tags, response tags
    return w().int32(0).uvarint(2).bytes() + group.bytes() + member.bytes() + assignments + tail + end


@pytest.mark.parametrize("version", [5, 6])
def test_describe_groups_decodes_consumer_members_and_leaves_bad_assignments_owning_nothing(version: int) -> None:
    good = classic_member_bytes("m-1", "c-1", assignment_bytes(1, [("t", [0, 1])]))
    bad = classic_member_bytes("m-2", "c-2", b"\x00\x01\x00")
    data = describe_groups_response(version, "consumer", good, bad)
    (group,) = decode_describe_groups(Reader(data), version)
    assert (group.state, group.type, group.protocol_type) == (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC,
                                                              "consumer")  # fmt: skip
    assert [(m.member_id, m.client_id, m.host, m.target_assignment) for m in group.members] == [
        ("m-1", "c-1", "/10.0.0.7", None), ("m-2", "c-2", "/10.0.0.7", None)
    ]  # fmt: skip
    assert [m.assignment.topic_partitions for m in group.members] == [[("t", 0), ("t", 1)], []]


def test_a_response_that_does_not_parse_is_a_protocol_error_naming_the_request() -> None:
    owned, target = topic_partitions_bytes("t", 0), topic_partitions_bytes("t", 0, 1)
    whole = consumer_group_describe_response(1, owned, target)
    with pytest.raises(ProtocolError, match="ConsumerGroupDescribe response does not parse"):
        decode_consumer_group_describe(Reader(whole[:-10]), 1)
    with pytest.raises(ProtocolError, match="DescribeGroups response: 1 bytes left"):
        decode_describe_groups(Reader(describe_groups_response(6, "consumer") + b"\x00"), 6)


def test_an_assignment_of_another_protocol_type_is_not_read_as_partitions() -> None:
    """Connect's or Schema Registry's leader writes its own bytes: they name no partitions."""
    member = classic_member_bytes("m-1", "c-1", assignment_bytes(0, [("t", [0])]))
    (group,) = decode_describe_groups(Reader(describe_groups_response(6, "connect", member)), 6)
    assert group.members[0].assignment.topic_partitions == []


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_describe_gives_each_members_owned_and_target_partitions(version: int) -> None:
    owned, target = topic_partitions_bytes("t", 0), topic_partitions_bytes("t", 0, 1)
    (group,) = decode_consumer_group_describe(Reader(consumer_group_describe_response(version, owned, target)), version)
    (member,) = group.members
    assert (group.group_id, group.state, group.type) == ("k", ConsumerGroupState.UNKNOWN, ConsumerGroupType.CONSUMER)
    assert (member.member_id, member.client_id, member.host, member.group_instance_id) == (
        "m-1", "client-1", "/10.0.0.8", "static-1"
    )  # fmt: skip
    assert (member.assignment.topic_partitions, member.target_assignment) == (
        [("t", 0)], MemberAssignment([AssignedPartition("t", 0), AssignedPartition("t", 1)])
    )  # fmt: skip
    # What the samples make of it: Reconciling (a member short of its target), partition 1 pending.
    assert described_state_code(group) == GROUP_STATE_CODE["Reconciling"]
    make = SampleFactory(cluster="test", collector="test")
    pending = partition_pending_samples("k", group, NameFilter([".*"], []), 1, make)  # type: ignore[arg-type]
    assert [(s.topic, s.partition, s.member_id) for s in pending] == [("t", 1, "m-1")]
    owners = partition_owner_samples("k", group, NameFilter([".*"], []), 1, make)  # type: ignore[arg-type]
    assert [(s.topic, s.partition, s.client_id) for s in owners] == [("t", 0, "client-1")]


# -- the real broker -----------------------------------------------------------------------------------


class Groups:
    """Groups of every kind on one topic: ids by kind, the members that keep them alive."""

    def __init__(self, broker: RealKafkaBroker) -> None:
        stamp = time.time_ns()
        self.topic = f"describe-{stamp}"
        workload = KafkaWorkload(broker.bootstrap_servers)
        workload.create_topic(self.topic, 4)
        self.classic, self.empty, self.absent = (f"describe-{stamp}-{kind}" for kind in ("classic", "empty", "absent"))
        self.kip848 = f"describe-{stamp}-kip848" if broker.version >= (4, 0, 0) else None
        workload.commit(self.empty, self.topic, {0: 5, 1: 6})  # a group with commits and no member
        self.members = [GroupMember(broker.bootstrap_servers, self.classic, self.topic, f"classic-{i}", 1)
                        for i in range(2)]  # fmt: skip
        if self.kip848 is not None:
            self.members += [
                GroupMember(broker.bootstrap_servers, self.kip848, self.topic, f"kip848-{i}", 1, "consumer")
                for i in range(2)
            ]
        wait_for(lambda: sorted(len(m.assigned) for m in self.members) == [2] * len(self.members),
                 "each member to own two partitions")  # fmt: skip

    @property
    def ids(self) -> list[str]:
        return [g for g in (self.classic, self.empty, self.absent, self.kip848) if g is not None]

    def close(self) -> None:
        for member in self.members:
            member.close()


@pytest.fixture(scope="module")
def groups(broker: RealKafkaBroker) -> Iterator[Groups]:
    made = Groups(broker)
    yield made
    made.close()


def own_summaries(read: GroupDescriptions) -> dict[str, Summary]:
    assert (read.errors, read.unfinished_keys) == ({}, [])
    return {group_id: summary(description) for group_id, description in read.answers.items()}


def test_each_kind_of_group_reads_as_librdkafka_reads_it(broker: RealKafkaBroker, groups: Groups) -> None:
    own = own_summaries(read_group_descriptions(brokers(broker), groups.ids, time.monotonic() + 30))
    assert own == librdkafka_summaries(broker.bootstrap_servers, groups.ids)
    stable, classic = GROUP_STATE_CODE["Stable"], GROUP_TYPE_CODE["classic"]
    assert own[groups.empty] == (GROUP_STATE_CODE["Empty"], classic, set())
    assert own[groups.absent] == (GROUP_STATE_CODE["Dead"], classic, set())
    state, group_type, members = own[groups.classic]
    assert (state, group_type) == (stable, classic)
    assert {m[1] for m in members} == {"classic-0", "classic-1"} and all(m[4] is None for m in members)
    assert set().union(*(m[3] for m in members)) == {(groups.topic, p) for p in range(4)}
    if groups.kip848 is not None:
        state, group_type, members = own[groups.kip848]
        assert (state, group_type) == (stable, GROUP_TYPE_CODE["consumer"])
        assert {m[1] for m in members} == {"kip848-0", "kip848-1"}
        assert all(m[3] == m[4] and len(m[3]) == 2 for m in members)  # settled: each owns its target


def test_groups_consumer_group_describe_does_not_know_are_asked_with_describe_groups_at_once(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka's order: ConsumerGroupDescribe first, DescribeGroups for its GROUP_ID_NOT_FOUND (classic groups)."""
    if not speaks_consumer_group_describe(broker):
        pytest.skip("the broker does not speak ConsumerGroupDescribe")
    requests = RequestCounter(monkeypatch)
    ids = [g for g in (groups.kip848, groups.classic, groups.absent) if g is not None]
    own = own_summaries(read_group_descriptions(brokers(broker), ids, time.monotonic() + 30))
    assert own == librdkafka_summaries(broker.bootstrap_servers, ids)
    assert requests.sent == {FIND_COORDINATOR: 1, CONSUMER_GROUP_DESCRIBE: 1, DESCRIBE_GROUPS: 1}


class RequestCounter:
    """Counts the requests per API key sent on any BrokerConnection of the test (ApiVersions aside)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: dict[int, int] = {}
        original = BrokerConnection.request

        def counted(connection: BrokerConnection, api_key: int, *args: Any, **kwargs: Any) -> Reader:
            if api_key != 18:
                self.sent[api_key] = self.sent.get(api_key, 0) + 1
            return original(connection, api_key, *args, **kwargs)

        monkeypatch.setattr(BrokerConnection, "request", counted)


def test_many_groups_take_one_lookup_and_a_request_per_chunk(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(group_descriptions, "GROUPS_PER_REQUEST", 2)
    requests = RequestCounter(monkeypatch)
    ids = [groups.classic, groups.empty, groups.absent] + [f"{groups.absent}-{i}" for i in range(3)]
    read = read_group_descriptions(brokers(broker), ids, time.monotonic() + 30)
    assert set(read.answers) == set(ids)
    # Six groups, two a request; each asked with ConsumerGroupDescribe first where the broker speaks it.
    consumer_group_describes = 3 if speaks_consumer_group_describe(broker) else 0
    assert requests.sent.get(CONSUMER_GROUP_DESCRIBE, 0) == consumer_group_describes
    assert (requests.sent[FIND_COORDINATOR], requests.sent[DESCRIBE_GROUPS]) == (1, 3)


def test_a_moved_coordinator_is_looked_up_again_within_the_cycle(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_answer = True
    decode = group_descriptions.decode_describe_groups

    def moved_once(reader: Reader, version: int) -> list[GroupDescription]:
        nonlocal first_answer
        answers = decode(reader, version)
        if first_answer:
            first_answer = False
            moved = answers[0]
            answers[0] = GroupDescription(moved.group_id, 16, None, moved.state, moved.type)  # NOT_COORDINATOR
        return answers

    monkeypatch.setattr(group_descriptions, "decode_describe_groups", moved_once)
    requests = RequestCounter(monkeypatch)
    read = read_group_descriptions(brokers(broker), [groups.classic], time.monotonic() + 30)
    assert requests.sent[FIND_COORDINATOR] == 2
    assert own_summaries(read) == librdkafka_summaries(broker.bootstrap_servers, [groups.classic])


def test_remembered_coordinators_and_requests_spare_the_next_lookup_and_the_requests_that_would_not_know(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered = Remembered()

    def read() -> dict[str, Summary]:
        return own_summaries(read_group_descriptions(brokers(broker), groups.ids, time.monotonic() + 30, PLAINTEXT,
                                                     remembered))  # fmt: skip

    first = read()
    assert set(remembered.coordinators) == set(groups.ids)
    requests = RequestCounter(monkeypatch)
    assert read() == first
    if broker.version >= (4, 0, 0):
        # The classic groups straight to DescribeGroups; the KIP-848 group and the absent one (remembered
        # by no request) to ConsumerGroupDescribe first, the absent one then to DescribeGroups.
        assert requests.sent == {CONSUMER_GROUP_DESCRIBE: 1, DESCRIBE_GROUPS: 2}
    else:  # Kafka 3.8's DescribeGroups v5 reads an absent group as Dead: remembered as described by it too
        assert requests.sent == {DESCRIBE_GROUPS: 1}

    remembered.coordinators[groups.classic] = ("127.0.0.1", 1)  # a coordinator that went away: nothing listens there
    requests.sent.clear()
    assert read() == first
    assert requests.sent[FIND_COORDINATOR] == 1
    assert remembered.coordinators[groups.classic] == ("127.0.0.1", broker.port)


def test_groups_left_at_the_deadline_are_unfinished_not_errors(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stalled(connection: BrokerConnection, version: int, keys: list[str]) -> list[Any]:
        raise TimeoutError(f"{connection.address}: cycle deadline reached")

    monkeypatch.setattr(group_descriptions, "find_coordinators", stalled)
    read = read_group_descriptions(brokers(broker), groups.ids, time.monotonic() + 30)
    assert (read.answers, read.errors, read.unfinished_keys) == ({}, {}, groups.ids)


def test_no_broker_answering_is_an_os_error_naming_each(broker: RealKafkaBroker) -> None:
    with pytest.raises(OSError, match=r"no broker answered: 127\.0\.0\.1:1: .*"):
        read_group_descriptions([("127.0.0.1", 1)], ["g"], time.monotonic() + 5)


def test_on_tansu_each_group_reads_as_librdkafka_reads_it(tansu: EmbeddedBroker) -> None:
    """tansu (the embedded broker of `make run`) answers ConsumerGroupDescribe for every group, and
    DescribeGroups otherwise: asked in librdkafka's order, the answers are librdkafka's."""
    workload = KafkaWorkload(tansu.bootstrap_servers, single_record_batches=True)
    stamp = time.time_ns()
    topic, ids = f"tansu-describe-{stamp}", [f"tansu-describe-{stamp}-{kind}" for kind in ("member", "empty", "absent")]
    workload.create_topic(topic, 2)
    workload.commit(ids[1], topic, {0: 1})
    member = GroupMember(tansu.bootstrap_servers, ids[0], topic, "tansu-0", None)
    try:
        wait_for(lambda: member.assigned == {0, 1}, "the member to own both partitions")
        host, port = tansu.bootstrap_servers.split(",")[0].rsplit(":", 1)
        own = own_summaries(read_group_descriptions([(host, int(port))], ids, time.monotonic() + 30))
        assert own == librdkafka_summaries(tansu.bootstrap_servers, ids)
    finally:
        member.close()
    assert own[ids[0]][0] == GROUP_STATE_CODE["Stable"]


# -- the collector's choice ------------------------------------------------------------------------------


def describer_reads(broker: RealKafkaBroker, group_ids: list[str]) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    describer = GroupDescriber("admin@test", plaintext_security(broker))
    read = describer.read(admin, admin.list_topics(timeout=10), group_ids, 10, 4, time.monotonic() + 30)
    assert (read.errors, read.unfinished) == ({}, 0)
    return read.answers


def test_the_describer_uses_the_own_client_unless_the_switch_says_librdkafka(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [groups.classic, groups.empty]
    own = describer_reads(broker, ids)
    monkeypatch.setattr(protocol_choice, "PROTOCOL_CLIENT", False)
    by_librdkafka = describer_reads(broker, ids)
    assert all(isinstance(d, GroupDescription) for d in own.values())
    assert all(isinstance(d, ConsumerGroupDescription) for d in by_librdkafka.values())
    assert {g: summary(d) for g, d in own.items()} == {g: summary(d) for g, d in by_librdkafka.items()}


def test_brokers_without_the_batched_describe_fall_back_to_librdkafka_said_once(
    broker: RealKafkaBroker, groups: Groups, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(group_descriptions, "DESCRIBE_GROUPS_VERSIONS", (9,))  # a version no broker speaks yet
    requests = RequestCounter(monkeypatch)
    caplog.set_level(logging.INFO, logger=protocol_choice.__name__)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    describer = GroupDescriber("admin@test", plaintext_security(broker))
    for _ in range(2):
        read = describer.read(admin, admin.list_topics(timeout=10), [groups.classic], 10, 4, time.monotonic() + 30)
        assert isinstance(read.answers[groups.classic], ConsumerGroupDescription)
    assert DESCRIBE_GROUPS not in requests.sent
    said = [r.getMessage() for r in caplog.records if "requests per group (librdkafka)" in r.getMessage()]
    assert len(said) == 1 and "does not speak" in said[0], said
    with pytest.raises(NotSpoken):
        read_group_descriptions(brokers(broker), [groups.classic], time.monotonic() + 30)


# -- the secured broker ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def secured_groups(secure_broker: SecureKafkaBroker) -> list[str]:
    """Groups committed by the super user: half named for the principal that may describe them only."""
    stamp = time.time_ns()
    topic = f"secured-describe-{stamp}"
    workload = secure_broker.admin_workload()
    workload.create_topic(topic, 2)
    group_ids = [f"{VISIBLE_GROUP_PREFIX * (i % 2)}secured-describe-{stamp}-{i}" for i in range(6)]
    for group_id in group_ids:
        workload.commit(group_id, topic, {0: 1})
    return group_ids


def test_a_group_the_principal_may_not_describe_is_refused_as_librdkafka_refuses_it(
    secure_broker: SecureKafkaBroker, secured_groups: list[str]
) -> None:
    settings = secure_broker.client_settings(MONITOR_SOME_GROUPS)
    security = ClientSecurity.of("secured-test", settings)
    read = read_group_descriptions([("127.0.0.1", secure_broker.port)], secured_groups, time.monotonic() + 30, security)
    admin = AdminClient(settings)
    futures = admin.describe_consumer_groups(secured_groups, request_timeout=20)
    expected, expected_errors = {}, set()
    for group_id, future in futures.items():
        try:
            expected[group_id] = summary(future.result(timeout=30))
        except Exception:
            expected_errors.add(group_id)
    visible = {g for g in secured_groups if g.startswith(VISIBLE_GROUP_PREFIX)}
    assert {g: summary(d) for g, d in read.answers.items()} == expected and set(expected) == visible
    assert set(read.errors) == expected_errors == set(secured_groups) - visible
    assert all(refused(error) for error in read.errors.values()), read.errors
    assert all(summary(d)[0] == GROUP_STATE_CODE["Empty"] for d in read.answers.values())


def test_the_super_user_reads_every_secured_group(secure_broker: SecureKafkaBroker, secured_groups: list[str]) -> None:
    security = ClientSecurity.of("secured-test", secure_broker.client_settings(ADMIN_USER))
    read = read_group_descriptions([("127.0.0.1", secure_broker.port)], secured_groups, time.monotonic() + 30, security)
    assert set(read.answers) == set(secured_groups) and read.errors == {}
