"""The commit-log source on a real Kafka 3.8 broker: the decoder on the records the broker
writes, the reader's table and queue, and the admin collector with and without it."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from collectors.admin.collector import AdminCollector
from collectors.admin.samples import NameFilter
from collectors.base import SampleFactory, ScrapeResult
from collectors.commit_log.decode import (
    GROUP_METADATA,
    OFFSET_COMMIT,
    commit_offset_and_time,
    decode_group_metadata,
    decode_key,
    decode_offset_commit,
)
from collectors.commit_log.reader import TOPIC, CommitLogReader
from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config

MAKE = SampleFactory(cluster="test", collector="test-instance")
ALL = NameFilter([".*"], [])


def raw_records(bootstrap: str, groups: set[str]) -> list[tuple[bytes, bytes | None]]:
    """Every record of `__consumer_offsets` (key, value) that belongs to one of `groups`, in log order per partition."""
    probe = AdminClient({"bootstrap.servers": bootstrap})
    partitions = list(probe.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "test-raw-reader",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in partitions])
    at_end: set[int] = set()
    found: list[tuple[bytes, bytes | None]] = []
    give_up = time.monotonic() + 60  # a bound on the wait, not a timed assertion
    try:
        while len(at_end) < len(partitions) and time.monotonic() < give_up:
            for message in consumer.consume(500, timeout=0.5):
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(message.partition())
                    continue
                if decode_key(message.key())[1] in groups:
                    found.append((message.key(), message.value()))
    finally:
        consumer.close()
    assert len(at_end) == len(partitions), "the commit log was not read to its end"
    return found


def join_consume_commit(bootstrap: str, group_id: str, topic: str, client_id: str) -> dict[int, int]:
    """A real member joins `group_id`, consumes everything in `topic`, commits, leaves; returns next offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe([topic])
    positions: dict[int, int] = {}
    at_end: set[int] = set()
    give_up = time.monotonic() + 60
    try:
        while time.monotonic() < give_up:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                    if len(at_end) == len(consumer.assignment()):
                        break
                continue
            positions[message.partition()] = message.offset() + 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return positions


def started_reader(bootstrap: str) -> CommitLogReader:
    """A reader of the whole log, loaded up to its end (the log must exist)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = len(admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
    started = CommitLogReader({"bootstrap.servers": bootstrap}, "test", ALL, ALL)
    started.start(partitions)
    assert started.wait_loaded(60), started.failure or started.loading_progress
    return started


@pytest.fixture
def reader(broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]) -> Iterator[CommitLogReader]:
    """A loaded reader; the log is made first when no test before this one committed (run alone)."""
    if TOPIC not in AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10).topics:
        seed = unique("seed")
        kafka.create_topic(seed, 1)
        kafka.produce(seed, {0: 1})
        kafka.commit(seed, seed, {0: 1})
    started = started_reader(broker.bootstrap_servers)
    yield started
    started.close()


# -- the decoder, on records the real broker wrote ------------------------------------------------


def test_decoder_reads_every_record_version_the_broker_writes(
    broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, member_group, empty_group = unique("topic"), unique("members"), unique("empty")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 30, 1: 20})
    before = int(time.time() * 1000)
    positions = join_consume_commit(broker.bootstrap_servers, member_group, topic, "decoder-client")
    kafka.commit(empty_group, topic, {0: 7, 1: 3})
    after = int(time.time() * 1000)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for deleted in admin.delete_consumer_groups([member_group, empty_group], request_timeout=10).values():
        deleted.result()

    records = raw_records(broker.bootstrap_servers, {member_group, empty_group})
    kafka_4 = broker.version >= (4, 0, 0)
    key_versions = {int.from_bytes(key[:2], "big") for key, _ in records}
    assert key_versions == {1, 2}  # offset commit keys and group metadata keys
    commits: dict[tuple[str, str, int], list[int]] = {}
    commit_versions, group_versions, tombstones = set(), set(), set()
    members: list[Any] = []
    for key, value in records:
        kind, group, record_topic, partition = decode_key(key)
        if value is None:
            tombstones.add((kind, group))
            continue
        version = int.from_bytes(value[:2], "big")
        if kind == OFFSET_COMMIT:
            commit = decode_offset_commit(value)
            assert commit_offset_and_time(value) == (commit.offset, commit.commit_ts)  # the hot path agrees
            commit_versions.add(version)
            assert before <= commit.commit_ts <= after
            assert commit.metadata == ""
            commits.setdefault((group, record_topic, partition), []).append(commit.offset)
        else:
            assert kind == GROUP_METADATA
            metadata = decode_group_metadata(value)
            group_versions.add(version)
            if kafka_4 and metadata.protocol_type == "":  # the group as Kafka 4's first JoinGroup created it
                assert (group, metadata.generation, metadata.members) == (member_group, 0, ())
                continue
            assert (group, metadata.protocol_type) == (member_group, "consumer")
            members.extend(metadata.members)
    if kafka_4:
        assert commit_versions == {4} and group_versions == {3}  # what Kafka 4.3 writes for a classic group
    else:
        assert commit_versions == {3} and group_versions == {3}  # what Kafka 3.8 writes
    assert commits == {
        (member_group, topic, 0): [positions[0]],
        (member_group, topic, 1): [positions[1]],
        (empty_group, topic, 0): [7],
        (empty_group, topic, 1): [3],
    }
    assert positions == {0: 30, 1: 20}
    # The member while it was in the group: its client id, and the partitions it was assigned.
    assert {m.client_id for m in members} == {"decoder-client"}
    assert {tp for m in members for tp in m.assignment} == {(topic, 0), (topic, 1)}
    # Deleting the groups wrote tombstones for their offsets and, for the group that had
    # metadata (the one that had members), for the group itself; Kafka 4 also for the other.
    expected = {(OFFSET_COMMIT, member_group), (OFFSET_COMMIT, empty_group), (GROUP_METADATA, member_group)}
    if kafka_4:
        expected.add((GROUP_METADATA, empty_group))
    assert tombstones == expected


def commit_with_retention(bootstrap: str, group: str, topic: str, offset: int, retention_ms: int) -> int:
    """OffsetCommit v2 with a retention time, sent by hand (librdkafka never sets one): the one
    commit for which Kafka 3.8 still writes an OffsetCommitValue v1. Returns the error code."""

    def string(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()

    body = string(group) + struct.pack(">i", -1) + string("") + struct.pack(">q", retention_ms)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1) + struct.pack(">iq", 0, offset) + string("")
    request = struct.pack(">hhi", 8, 2, 1) + string("lagwatch-test") + body  # OffsetCommit v2, correlation 1
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _receive(sock, 4))[0]
        response = _receive(sock, size)
    # correlation id, [topics]: name, [partitions]: partition, error code
    topic_len = struct.unpack_from(">h", response, 8)[0]
    return struct.unpack_from(">h", response, 10 + topic_len + 4 + 4)[0]


def _receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return data


def test_decoder_reads_the_v1_value_of_a_commit_with_a_retention_time(
    broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group = unique("topic"), unique("retained")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 10})
    kafka.commit(unique("warm-up"), topic, {0: 1})  # the coordinator is loaded and answers
    assert commit_with_retention(broker.bootstrap_servers, group, topic, 8, 3_600_000) == 0
    ((key, value),) = raw_records(broker.bootstrap_servers, {group})
    assert decode_key(key) == (OFFSET_COMMIT, group, topic, 0)
    commit = decode_offset_commit(value or b"")
    assert (commit.version, commit.offset, commit.leader_epoch) == (1, 8, -1)
    assert commit_offset_and_time(value or b"") == (8, commit.commit_ts)
    assert commit.expire_ts == commit.commit_ts + 3_600_000


# -- the reader --------------------------------------------------------------------------------


def test_reader_queues_every_commit_even_a_rewind_undone_at_once(
    reader: CommitLogReader, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group = unique("topic"), unique("rewinder")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 1500})
    for offset in (1000, 500, 1000):
        kafka.commit(group, topic, {0: offset})
    mine: list[tuple[str, str, int, int, int]] = []

    def three_read() -> bool:
        mine.extend(commit for commit in reader.drain() if commit[0] == group)
        return len(mine) >= 3

    wait_until(three_read, 30, "the three commits are read")
    assert [(g, t, p, offset) for g, t, p, offset, _ in mine] == [
        (group, topic, 0, 1000),
        (group, topic, 0, 500),
        (group, topic, 0, 1000),
    ]
    stamps = [ts for *_, ts in mine]
    assert stamps == sorted(stamps)
    assert [(tp.topic, tp.partition, tp.offset) for tp in reader.committed()[group]] == [(topic, 0, 1000)]


def test_reader_forgets_a_deleted_group(
    broker: RealKafkaBroker, reader: CommitLogReader, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group, kept = unique("topic"), unique("deleted"), unique("kept")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 10})
    kafka.commit(group, topic, {0: 4})
    kafka.commit(kept, topic, {0: 6})
    wait_until(lambda: group in reader.committed() and kept in reader.committed(), 30, "both groups in the table")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.delete_consumer_groups([group], request_timeout=10)[group].result()
    wait_until(lambda: group not in reader.committed(), 30, "the deleted group leaves the table")
    assert [tp.offset for tp in reader.committed()[kept]] == [6]


def test_table_stays_bounded_while_short_lived_groups_come_and_go(
    broker: RealKafkaBroker, reader: CommitLogReader, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    """Group ids that commit once and are deleted (console consumers, test runs) must not leave
    an entry each behind: over a long run they would grow the table without bound."""
    topic = unique("topic")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 10, 1: 10})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    baseline = reader.held_groups
    for round_ in range(5):
        groups = [unique(f"transient-{round_}-{n}") for n in range(8)]
        for group in groups:
            kafka.commit(group, topic, {0: 3, 1: 5})
        wait_until(lambda wanted=set(groups): wanted <= set(reader.committed()), 30, "the round's groups in the table")
        assert reader.held_groups == baseline + len(groups)
        for deleted in admin.delete_consumer_groups(groups, request_timeout=10).values():
            deleted.result()
        wait_until(lambda: reader.held_groups == baseline, 30, "the deleted groups' entries gone")


# -- the admin collector with the commit log -------------------------------------------------------


def values(result: ScrapeResult, metric: str, source: str, group: str) -> dict[tuple[str | None, int | None], float]:
    return {
        (s.topic, s.partition): s.value
        for s in result.samples
        if s.metric == metric and s.source == source and s.group_id == group
    }


def gauge(result: ScrapeResult, metric: str) -> list[float]:
    return [s.value for s in result.samples if s.metric == metric]


def test_admin_cycle_takes_committed_offsets_from_the_commit_log(
    make_config: Callable[..., Config], broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group, deleted = unique("topic"), unique("group"), unique("deleted")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 100, 1: 50})
    before = int(time.time() * 1000)
    kafka.commit(group, topic, {0: 60, 1: 50})
    kafka.commit(deleted, topic, {0: 10})
    after = int(time.time() * 1000)
    collector = AdminCollector(make_config(collect={"describe_groups": False, "groups_allow": ["^group-|^deleted-"]}))
    try:
        first = collector.collect(1_700_000_000_000, MAKE)
        assert first.ok, first.errors
        assert gauge(first, "commit_log_in_use") == [1.0]
        assert values(first, "committed_offset", "admin", group) == {(topic, 0): 60, (topic, 1): 50}
        assert values(first, "consumer_lag", "admin", group) == {(topic, 0): 40, (topic, 1): 0}
        # The load's snapshot: the latest commit of each group-partition, stamped with its commit time.
        snapshot = [s for s in first.samples if s.source == "commitlog" and s.group_id == group]
        assert {(s.partition, s.value) for s in snapshot} == {(0, 60), (1, 50)}
        assert all(before <= s.ts <= after for s in snapshot)

        kafka.commit(group, topic, {0: 20})  # a rewind, undone before the next cycle
        kafka.commit(group, topic, {0: 90})
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.delete_consumer_groups([deleted], request_timeout=10)[deleted].result()
        second = collector.collect(1_700_000_015_000, MAKE)
        assert second.ok, second.errors
        commits = sorted((s.ts, s.value) for s in second.samples if s.source == "commitlog" and s.group_id == group)
        assert [value for _, value in commits] == [20, 90]
        assert values(second, "committed_offset", "admin", group) == {(topic, 0): 90, (topic, 1): 50}
        assert values(second, "consumer_lag", "admin", group) == {(topic, 0): 10, (topic, 1): 0}
        assert not [s for s in second.samples if s.group_id == deleted]
    finally:
        collector.close()


def test_admin_collector_falls_back_to_offset_fetch_where_the_topic_is_missing(
    tansu: Any,
    tansu_kafka: KafkaWorkload,
    unique: Callable[[str], str],
    make_config: Callable[..., Config],
    caplog: pytest.LogCaptureFixture,
):
    topic, group = unique("topic"), unique("group")
    tansu_kafka.create_topic(topic, 1)
    tansu_kafka.produce(topic, {0: 5})
    tansu_kafka.commit(group, topic, {0: 2})
    config = make_config(
        cluster={"bootstrap_servers": tansu.bootstrap_servers}, collect={"commit_log": "on", "describe_groups": False}
    )
    collector = AdminCollector(config)
    try:
        with caplog.at_level(logging.WARNING, logger="collectors.admin.collector"):
            result = collector.collect(1_700_000_000_000, MAKE)
    finally:
        collector.close()
    assert result.ok
    assert gauge(result, "commit_log_in_use") == [0.0]
    assert values(result, "committed_offset", "admin", group) == {(topic, 0): 2}
    assert not [s for s in result.samples if s.source == "commitlog" and s.metric == "committed_offset"]
    why = f"the cluster has no {TOPIC} topic visible to this principal"
    assert any(e.startswith(f"commit_log = on, but {why}") for e in result.errors), result.errors
    assert any(f"committed offsets from OffsetFetch (source admin): {why}" in r.getMessage() for r in caplog.records)


def test_commit_log_off_uses_offset_fetch_only(
    make_config: Callable[..., Config], kafka: KafkaWorkload, unique: Callable[[str], str]
):
    topic, group = unique("topic"), unique("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 10})
    kafka.commit(group, topic, {0: 4})
    collector = AdminCollector(make_config(collect={"commit_log": "off", "describe_groups": False}))
    try:
        result = collector.collect(1_700_000_000_000, MAKE)
    finally:
        collector.close()
    assert result.ok
    assert gauge(result, "commit_log_in_use") == []
    assert values(result, "consumer_lag", "admin", group) == {(topic, 0): 6}
    assert not [s for s in result.samples if s.source == "commitlog"]
