"""Committed offsets of many groups per OffsetFetch (v8/v9) over Lagwatch's own protocol client,
against what confluent-kafka's `list_consumer_group_offsets` (one group per request) reads.

On the real broker of the run (Kafka 4.3.1, or 3.8.0 in the compat run) and on the secured
broker for a principal refused some groups. The wire tests use bytes written out by hand from
OffsetFetchRequest.json / OffsetFetchResponse.json.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from collectors.admin import committed_offsets, protocol_choice
from collectors.admin.collector import AdminCollector
from collectors.admin.committed_offsets import CommittedOffsetReader
from collectors.admin.group_visibility import refused
from collectors.base import SampleFactory
from collectors.kafka_protocol import group_offsets
from collectors.kafka_protocol.connection import BrokerConnection, ClientSecurity
from collectors.kafka_protocol.find_coordinator import FIND_COORDINATOR, encode_find_coordinator
from collectors.kafka_protocol.group_offsets import GroupOffsetsRead
from collectors.kafka_protocol.offset_fetch import (
    OFFSET_FETCH,
    FetchedGroup,
    decode_offset_fetch,
    encode_offset_fetch,
)
from collectors.kafka_protocol.wire import ProtocolError, Reader, Writer
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from harness.secure_kafka import ADMIN_USER, MONITOR_SOME_GROUPS, VISIBLE_GROUP_PREFIX, SecureKafkaBroker
from lagwatch.config import Config
from shell.broker import EmbeddedBroker

#: Topics (name suffix → partitions) the groups commit on.
TOPICS = {"a": 6, "b": 3, "c": 1}
GROUPS = 300
#: Every NEVER_COMMITTED-th group id is asked for but never commits anything.
NEVER_COMMITTED = 10
Committed = dict[str, set[tuple[str, int, int, str, int | None]]]


def plaintext_security(broker: RealKafkaBroker) -> tuple[ClientSecurity | None, str | None]:
    return ClientSecurity.or_reason("test", {"bootstrap.servers": broker.bootstrap_servers})


def commits_of(index: int, topics: list[str]) -> list[TopicPartition]:
    """Group `index` commits on one topic (every fourth group on two), partition by partition, with
    its own offsets, metadata on odd groups and a leader epoch on every third group."""
    chosen = [topics[index % len(topics)]] + ([topics[(index + 1) % len(topics)]] if index % 4 == 0 else [])
    return [
        TopicPartition(topic, p, 1000 * index + 7 * p, f"meta-{index}" if index % 2 else "",
                       5 if index % 3 == 0 else -1)
        for topic in chosen
        for p in range(TOPICS[topic[-1]])
    ]  # fmt: skip


def commit_all(admin: AdminClient, offsets: dict[str, list[TopicPartition]]) -> None:
    """alter_consumer_group_offsets for every group, all in flight at once (one group per call)."""
    futures: list[Future[Any]] = []
    for group_id, partitions in offsets.items():
        request = [ConsumerGroupTopicPartitions(group_id, partitions)]
        futures += admin.alter_consumer_group_offsets(request, request_timeout=60).values()
    for future in futures:
        future.result(60)


def librdkafka_offsets(admin: AdminClient, group_ids: list[str]) -> tuple[Committed, dict[str, str]]:
    """What confluent-kafka reads per group: (topic, partition, offset, metadata, leader epoch) or the error."""
    futures = {
        g: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)], request_timeout=30)[g]
        for g in group_ids
    }
    offsets: Committed = {}
    errors: dict[str, str] = {}
    for group_id, future in futures.items():
        exc = future.exception(30)
        if exc is not None:
            errors[group_id] = exc.args[0].name()
            continue
        offsets[group_id] = {
            (tp.topic, tp.partition, tp.offset, tp.metadata or "", tp.leader_epoch)
            for tp in future.result().topic_partitions or []
        }
    return offsets, errors


def own_offsets(read: GroupOffsetsRead) -> tuple[Committed, dict[str, str]]:
    """The own client's reading, in librdkafka's terms: librdkafka commits metadata with its C
    string's closing NUL and reads it back as a C string, so the NUL the broker holds is dropped."""
    offsets: Committed = {}
    errors: dict[str, str] = {}
    with read:
        for group in read:
            assert group.group_id not in offsets and group.group_id not in errors, "a group answered twice"
            if group.error is not None:
                errors[group.group_id] = group.error
                continue
            offsets[group.group_id] = {
                (tp.topic, tp.partition, tp.offset, (tp.metadata or "").rstrip("\x00"), epoch_or_none(tp.leader_epoch))
                for tp in group.partitions
            }
    return offsets, errors


def epoch_or_none(epoch: int) -> int | None:
    return None if epoch < 0 else epoch


class RequestCounter:
    """Counts requests per API key on every BrokerConnection of the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: dict[int, int] = {}
        original = BrokerConnection.request

        def counted(connection: BrokerConnection, api_key: int, *args: Any, **kwargs: Any) -> Reader:
            self.sent[api_key] = self.sent.get(api_key, 0) + 1
            return original(connection, api_key, *args, **kwargs)

        monkeypatch.setattr(BrokerConnection, "request", counted)


@pytest.fixture(scope="module")
def committed_groups(broker: RealKafkaBroker) -> Iterator[tuple[list[str], dict[str, list[TopicPartition]]]]:
    """GROUPS group ids, all but every NEVER_COMMITTED-th with commits on one or two of three topics."""
    stamp = time.time_ns()
    topics = [f"offset-fetch-{stamp}-{suffix}" for suffix in TOPICS]
    workload = KafkaWorkload(broker.bootstrap_servers)
    for topic in topics:
        workload.create_topic(topic, TOPICS[topic[-1]])
    group_ids = [f"offset-fetch-{stamp}-{i:03d}" for i in range(GROUPS)]
    workload.commit(f"offset-fetch-{stamp}-warm-up", topics[0], {0: 1})  # waits out a fresh coordinator's loading
    offsets = {g: commits_of(i, topics) for i, g in enumerate(group_ids) if i % NEVER_COMMITTED}
    commit_all(AdminClient({"bootstrap.servers": broker.bootstrap_servers}), offsets)
    yield group_ids, offsets


def brokers(broker: RealKafkaBroker) -> list[tuple[str, int]]:
    return [("127.0.0.1", broker.port)]


# -- the wire --------------------------------------------------------------------------------------


def test_v8_and_v9_requests_name_each_group_and_ask_for_all_its_topics() -> None:
    # v8: groups [ "g1", topics null, tags ], RequireStable false, tags
    assert encode_offset_fetch(["g1"], 8).hex() == "02" + "03" + "6731" + "00" + "00" + "00" + "00"
    # v9 adds MemberId null and MemberEpoch -1 after the group id
    v9 = encode_offset_fetch(["g1"], 9, require_stable=True)
    assert v9.hex() == "02" + "036731" + "00" + "ffffffff" + "00" + "00" + "01" + "00"
    # FindCoordinator v4: KeyType 0 (group), CoordinatorKeys ["g1", "g2"], tags
    assert encode_find_coordinator(["g1", "g2"]).hex() == "00" + "03" + "036731" + "036732" + "00"


def response(*groups: bytes) -> bytes:
    writer = Writer().int32(0).uvarint(len(groups) + 1)  # throttle time, groups
    return writer.bytes() + b"".join(groups) + b"\x00"


def group_bytes(group_id: str, error: int, *topics: bytes) -> bytes:
    head = Writer().compact_string(group_id).uvarint(len(topics) + 1).bytes()
    return head + b"".join(topics) + Writer().int16(error).tagged_fields().bytes()


def topic_bytes(name: str, *partitions: tuple[int, int, int, str | None, int, bytes]) -> bytes:
    writer = Writer().compact_string(name).uvarint(len(partitions) + 1)
    parts = writer.bytes()
    for index, offset, epoch, metadata, error, tags in partitions:
        head = Writer().int32(index).bytes() + offset.to_bytes(8, "big", signed=True)
        parts += head + Writer().int32(epoch).compact_string(metadata).int16(error).bytes() + tags
    return parts + b"\x00"


def test_a_response_decodes_offsets_epochs_metadata_errors_and_skips_tagged_fields() -> None:
    one_tag = bytes([1, 7, 2]) + b"xy"  # one tagged field: tag 7, two bytes
    data = response(
        group_bytes(
            "g1", 0,
            topic_bytes("t", (0, 42, 3, None, 0, b"\x00"), (1, -1, -1, "m" * 200, 0, one_tag)),
            topic_bytes("u", (2, 7, -1, "", 88, b"\x00")),
        ),
        group_bytes("g2", 30),
    )  # fmt: skip
    g1, g2 = decode_offset_fetch(Reader(data))
    assert (g1.group_id, g1.error_code, g2.group_id, g2.error_code, g2.partitions) == ("g1", 0, "g2", 30, [])
    assert [(p.topic, p.partition, p.offset, p.leader_epoch, p.metadata) for p in g1.partitions] == [
        ("t", 0, 42, 3, None), ("t", 1, -1, -1, "m" * 200), ("u", 2, 7, -1, ""),
    ]  # fmt: skip
    assert [p.error.code() if p.error else 0 for p in g1.partitions] == [0, 0, 88]
    for cut in (3, len(data) // 2, len(data) - 1):
        with pytest.raises(ProtocolError):
            decode_offset_fetch(Reader(data[:cut]))


# -- the real broker -------------------------------------------------------------------------------


def test_batched_offsets_equal_what_librdkafka_reads_group_by_group(
    broker: RealKafkaBroker, committed_groups: tuple[list[str], dict[str, list[TopicPartition]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    group_ids, offsets = committed_groups
    monkeypatch.setattr(group_offsets, "GROUPS_PER_REQUEST", 64)
    requests = RequestCounter(monkeypatch)
    own, own_errors = own_offsets(GroupOffsetsRead(brokers(broker), group_ids, time.monotonic() + 30))
    expected, expected_errors = librdkafka_offsets(AdminClient({"bootstrap.servers": broker.bootstrap_servers}),
                                                   group_ids)  # fmt: skip
    assert own_errors == expected_errors == {}
    assert own == expected
    assert sum(len(p) for p in own.values()) == sum(len(p) for p in offsets.values()) > 900
    assert {g for g, p in own.items() if not p} == set(group_ids[::NEVER_COMMITTED])
    assert any(epoch == 5 for p in own.values() for *_, epoch in p)
    assert any(meta.startswith("meta-") for p in own.values() for *_, meta, _ in p)
    assert requests.sent[OFFSET_FETCH] == -(-GROUPS // 64)  # 5 requests for 300 groups
    assert requests.sent[FIND_COORDINATOR] == 1


def test_a_group_whose_coordinator_moved_is_looked_up_again_within_the_cycle(
    broker: RealKafkaBroker, committed_groups: tuple[list[str], dict[str, list[TopicPartition]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    group_ids, offsets = committed_groups
    first_answer = True
    decode = group_offsets.decode_offset_fetch

    def moved_once(reader: Reader) -> list[FetchedGroup]:
        nonlocal first_answer
        groups = decode(reader)
        if first_answer:
            first_answer = False
            groups[1] = FetchedGroup(groups[1].group_id, group_offsets.NOT_COORDINATOR)
        return groups

    monkeypatch.setattr(group_offsets, "decode_offset_fetch", moved_once)
    requests = RequestCounter(monkeypatch)
    read = GroupOffsetsRead(brokers(broker), group_ids[:20], time.monotonic() + 30)
    own, errors = own_offsets(read)
    assert (errors, read.unfinished, requests.sent[FIND_COORDINATOR]) == ({}, [], 2)
    assert own[group_ids[1]] == {
        (tp.topic, tp.partition, tp.offset, tp.metadata or "", tp.leader_epoch) for tp in offsets[group_ids[1]]
    }


def test_remembered_coordinators_spare_the_next_lookup_and_a_gone_one_is_looked_up_again(
    broker: RealKafkaBroker, committed_groups: tuple[list[str], dict[str, list[TopicPartition]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    group_ids, _ = committed_groups
    remembered: dict[str, tuple[str, int]] = {}
    first, _ = own_offsets(GroupOffsetsRead(brokers(broker), group_ids, time.monotonic() + 30, coordinators=remembered))
    assert set(remembered) == set(group_ids)
    requests = RequestCounter(monkeypatch)
    again, errors = own_offsets(
        GroupOffsetsRead(brokers(broker), group_ids, time.monotonic() + 30, coordinators=remembered)
    )
    assert (again, errors, requests.sent.get(FIND_COORDINATOR, 0)) == (first, {}, 0)

    remembered[group_ids[3]] = ("127.0.0.1", 1)  # a coordinator that went away: nothing listens there
    requests.sent.clear()
    moved, errors = own_offsets(
        GroupOffsetsRead(brokers(broker), group_ids, time.monotonic() + 30, coordinators=remembered)
    )
    assert (moved, errors, requests.sent[FIND_COORDINATOR]) == (first, {}, 1)
    assert remembered[group_ids[3]] == ("127.0.0.1", broker.port)


def test_groups_left_at_the_deadline_are_unfinished_not_errors(
    broker: RealKafkaBroker, committed_groups: tuple[list[str], dict[str, list[TopicPartition]]]
) -> None:
    group_ids, _ = committed_groups
    read = GroupOffsetsRead(brokers(broker), group_ids, time.monotonic() + 10).open()
    read.deadline = time.monotonic()  # the cycle's time is up after the connection
    assert list(read) == []
    assert read.unfinished == group_ids


def make_collector(make_config: Callable[..., Config]) -> AdminCollector:
    return AdminCollector(make_config(collect={"commit_log": "off", "describe_groups": False}))


def committed_samples(collector: AdminCollector) -> dict[tuple[Any, ...], float]:
    result = collector.collect(1_700_000_000_000, SampleFactory(cluster="test", collector="test-instance"))
    assert result.ok and not result.errors, result.errors
    return {(s.group_id, s.topic, s.partition): s.value for s in result.samples if s.metric == "committed_offset"}


def test_the_collector_reads_committed_offsets_in_batches_and_librdkafka_reads_the_same(
    make_config: Callable[..., Config], committed_groups: tuple[list[str], dict[str, list[TopicPartition]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _, offsets = committed_groups
    expected = {(g, tp.topic, tp.partition): float(tp.offset) for g, tps in offsets.items() for tp in tps}
    collector = make_collector(make_config)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(committed_offsets, "read_committed_offsets", None)  # librdkafka's path would fail
            batched = committed_samples(collector)
        monkeypatch.setattr(protocol_choice, "PROTOCOL_CLIENT", False)
        by_librdkafka = committed_samples(collector)
    finally:
        collector.close()
    ours = {key: value for key, value in batched.items() if key[0] in offsets}
    assert ours == expected
    assert {key: value for key, value in by_librdkafka.items() if key[0] in offsets} == expected


def test_brokers_without_offset_fetch_v8_fall_back_to_librdkafka_said_once(
    broker: RealKafkaBroker, committed_groups: tuple[list[str], dict[str, list[TopicPartition]]],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    group_ids, offsets = committed_groups
    monkeypatch.setattr(group_offsets, "OFFSET_FETCH_VERSIONS", (11,))  # a version no broker speaks yet
    requests = RequestCounter(monkeypatch)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    metadata = admin.list_topics(timeout=10)
    reader = CommittedOffsetReader("admin@test", plaintext_security(broker))
    caplog.set_level(logging.INFO, logger=protocol_choice.__name__)
    for _ in range(2):
        read = list(reader.read(admin, metadata, group_ids[:12], 4, time.monotonic() + 30))
        assert {g.group_id: len(g.partitions) for g in read if g.error is None} == {
            g: len(offsets.get(g, [])) for g in group_ids[:12]
        }
    assert OFFSET_FETCH not in requests.sent
    said = [r.getMessage() for r in caplog.records if "one OffsetFetch per group" in r.getMessage()]
    assert len(said) == 1 and "does not speak OffsetFetch v11+" in said[0], said


def test_on_tansu_the_batched_read_equals_librdkafkas(tansu: EmbeddedBroker) -> None:
    """tansu (the embedded broker of `make run`) has no commit log to read: OffsetFetch is its only path."""
    workload = KafkaWorkload(tansu.bootstrap_servers, single_record_batches=True)
    stamp = time.time_ns()
    topic, group_ids = f"tansu-offset-fetch-{stamp}", [f"tansu-offset-fetch-{stamp}-{i}" for i in range(8)]
    workload.create_topic(topic, 3)
    for i, group_id in enumerate(group_ids[:6]):
        workload.commit(group_id, topic, {p: i + p for p in range(3)})
    host, port = tansu.bootstrap_servers.split(",")[0].rsplit(":", 1)
    own, own_errors = own_offsets(GroupOffsetsRead([(host, int(port))], group_ids, time.monotonic() + 30))
    expected, expected_errors = librdkafka_offsets(AdminClient({"bootstrap.servers": tansu.bootstrap_servers}),
                                                   group_ids)  # fmt: skip
    assert (own_errors, expected_errors) == ({}, {})
    assert own == expected
    assert {g: len(p) for g, p in own.items()} == {g: 3 if i < 6 else 0 for i, g in enumerate(group_ids)}


# -- the secured broker ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def secured_groups(secure_broker: SecureKafkaBroker) -> tuple[str, list[str]]:
    """Groups committed by the super user: half named for the principal that may describe them only."""
    stamp = time.time_ns()
    topic = f"secured-offset-fetch-{stamp}"
    workload = secure_broker.admin_workload()
    workload.create_topic(topic, 2)
    group_ids = [f"{VISIBLE_GROUP_PREFIX * (i % 2)}secured-fetch-{stamp}-{i}" for i in range(12)]
    workload.commit(group_ids[0], topic, {0: 1})  # waits out the coordinator loading
    offsets = {g: [TopicPartition(topic, p, 10 * i + p) for p in range(2)] for i, g in enumerate(group_ids)}
    commit_all(AdminClient(secure_broker.client_settings(ADMIN_USER)), offsets)
    return topic, group_ids


def test_a_group_the_principal_may_not_describe_is_refused_as_librdkafka_refuses_it(
    secure_broker: SecureKafkaBroker, secured_groups: tuple[str, list[str]]
) -> None:
    _, group_ids = secured_groups
    settings = secure_broker.client_settings(MONITOR_SOME_GROUPS)
    security = ClientSecurity.of("secured-test", settings)
    own, own_errors = own_offsets(
        GroupOffsetsRead([("127.0.0.1", secure_broker.port)], group_ids, time.monotonic() + 30, security)
    )
    expected, expected_errors = librdkafka_offsets(AdminClient(settings), group_ids)
    visible = {g for g in group_ids if g.startswith(VISIBLE_GROUP_PREFIX)}
    assert own == expected and set(own) == visible and all(len(p) == 2 for p in own.values())
    assert set(own_errors) == set(expected_errors) == set(group_ids) - visible
    assert all(refused(error) for error in own_errors.values()), own_errors
    assert set(expected_errors.values()) == {"GROUP_AUTHORIZATION_FAILED"}


def test_a_tls_setting_the_own_client_refuses_falls_back_to_librdkafka(
    secure_broker: SecureKafkaBroker, secured_groups: tuple[str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    _, group_ids = secured_groups
    settings = {**secure_broker.client_settings(ADMIN_USER), "ssl.curves.list": "P-256"}
    admin = AdminClient(settings)
    reader = CommittedOffsetReader("admin@secured-test", ClientSecurity.or_reason("secured-test", settings))
    caplog.set_level(logging.INFO, logger=protocol_choice.__name__)
    read = list(reader.read(admin, admin.list_topics(timeout=10), group_ids, 4, time.monotonic() + 30))
    assert sorted(g.group_id for g in read if g.error is None and len(g.partitions) == 2) == sorted(group_ids)
    said = [r.getMessage() for r in caplog.records if "one OffsetFetch per group" in r.getMessage()]
    assert len(said) == 1 and "ssl.curves.list" in said[0], said
