"""Share groups (KIP-932) read over the Kafka protocol, against the real broker.

On Kafka 4.x: a real ShareConsumer is handed 1,000 records and acknowledges the first 300, then
stops acknowledging; the share lag Lagwatch reads is exactly 1,000 − 300, the start offset and
lag are what the broker's own ShareGroupCommand prints, and the admin cycle publishes them with
the group's state, member count and the member owning the partition. With the consumer closed
the group is Empty with no members and keeps its lag. On Kafka 3.x the brokers have no
share-group requests: nothing is read and nothing fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory
from collectors.kafka_protocol.security import CLIENT
from collectors.share_groups.reader import ShareGroupReader, read_share_groups
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE
from shell.broker import free_port
from tests.collectors.share_groups.share_members import ShareMember, share_group_command

MAKE = SampleFactory(cluster="test", collector="test-instance")
PRODUCED, ACKNOWLEDGED = 1000, 300


def _read(broker: Any, group: str) -> Any:
    return read_share_groups([("127.0.0.1", broker.port)], lambda g: g == group, time.monotonic() + 10)


def _values(samples: list[Any], group: str) -> dict[tuple[str, str | None, int | None], float]:
    return {(s.metric, s.topic, s.partition): s.value for s in samples if s.group_id == group}


def test_share_lag_is_exact_and_agrees_with_the_brokers_tool(
    broker: Any, kafka: KafkaWorkload, make_config: Callable[..., Config], unique: Callable[[str], str]
) -> None:
    if broker.version < (4, 1, 0):
        pytest.skip(f"share groups are GA from Kafka 4.1 (broker {broker.version_text})")
    topic, group = unique("share-topic"), unique("share-group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: PRODUCED})
    member = ShareMember(broker.bootstrap_servers, group, topic, "share-client")
    try:
        member.acknowledge_first(ACKNOWLEDGED)
        read = _read(broker, group)
        assert read.errors == []
        description, offsets = read.descriptions[group], read.offsets[group]
        assert (description.state, [m.client_id for m in description.members]) == ("Stable", ["share-client"])
        assert description.members[0].assignment == ((topic, 0),)
        [partition] = offsets.partitions
        assert (partition.topic, partition.partition, partition.lag) == (topic, 0, PRODUCED - ACKNOWLEDGED)
        assert share_group_command(broker.home, broker.bootstrap_servers, group) == {
            (topic, 0): (partition.start_offset, PRODUCED - ACKNOWLEDGED)
        }

        collector = AdminCollector(make_config(collect={"groups_allow": [f"^{group}$"], "topics_allow": [topic]}))
        try:
            result = collector.collect(1_700_000_000_000, MAKE)
        finally:
            collector.close()
        assert result.ok and result.errors == []
        published = _values(result.samples, group)
        assert published == {
            ("share_start_offset", topic, 0): partition.start_offset,
            ("share_group_lag", topic, 0): PRODUCED - ACKNOWLEDGED,
            ("consumer_group_state", None, None): GROUP_STATE_CODE["Stable"],
            ("consumer_group_members", None, None): 1,
            ("consumer_group_type", None, None): GROUP_TYPE_CODE["share"],
            ("partition_assigned", topic, 0): 1,
        }
        [owner] = [s for s in result.samples if s.metric == "partition_assigned" and s.group_id == group]
        assert (owner.client_id, owner.member_id, owner.host) == (
            "share-client", description.members[0].member_id, "/127.0.0.1",
        )  # fmt: skip
    finally:
        member.close()

    closed = _read(broker, group)
    assert (closed.descriptions[group].state, closed.descriptions[group].members) == ("Empty", ())
    assert [p.lag for p in closed.offsets[group].partitions] == [PRODUCED - ACKNOWLEDGED]


def test_a_broker_without_share_groups_is_read_as_none(broker: Any) -> None:
    """Kafka 3.x lacks the requests; on 4.x a filter that passes no group asks for nothing more."""
    read = read_share_groups([("127.0.0.1", broker.port)], lambda _: False, time.monotonic() + 10)
    assert (read.errors, read.descriptions, read.offsets) == ([], {}, {})
    assert read.without_share_groups == (1 if broker.version < (4, 1, 0) else 0)


def test_an_unreachable_broker_is_an_error_line_not_an_exception() -> None:
    port = free_port()
    read = read_share_groups([("127.0.0.1", port)], lambda _: True, time.monotonic() + 2)
    assert len(read.errors) == 1 and read.errors[0].startswith(f"share groups on 127.0.0.1:{port}: ")


def test_a_cluster_the_reader_cannot_connect_to_is_said_once_and_read_as_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Metadata:
        brokers: ClassVar[dict[int, Any]] = {}

    kerberos = {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}
    reader = ShareGroupReader("admin@test", kerberos, lambda _: True, cluster="test")
    with caplog.at_level("INFO", logger="collectors.share_groups.reader"):
        for _ in range(3):
            read = reader.read(Metadata(), time.monotonic() + 1)
            assert (read.errors, read.descriptions) == ([], {})
    assert [r.getMessage() for r in caplog.records] == [
        f"admin@test: share groups not read: cluster test: sasl.mechanism GSSAPI is not supported by {CLIENT}; "
        "use PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER"
    ]


def test_the_embedded_tansu_broker_has_no_share_groups_and_no_error(tansu: Any) -> None:
    host, port = tansu.bootstrap_servers.rsplit(":", 1)
    read = read_share_groups([(host, int(port))], lambda _: True, time.monotonic() + 10)
    assert (read.errors, read.descriptions, read.without_share_groups) == ([], {}, 1)
