"""Streams groups (KIP-1071) read over the Kafka protocol, against the real 4.x broker and a real
Kafka Streams application (WordCountDemo in `group.protocol=streams`, harness/kafka_streams.py).

The broker's own StreamsGroupCommand is the reference: Lagwatch's reader lists the group as
type streams with the members and active tasks the tool prints, the admin cycle names the owner
of every source partition (input and repartition topic), and the committed offsets it reads
through OffsetFetch (the commit log switched off) give the lag the tool prints. Kafka 4.2 and
later only (streams groups are production-ready there): outside tests/collectors, which also run
on the oldest supported line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory
from collectors.streams_groups.reader import read_streams_groups
from harness.kafka_streams import INPUT_TOPIC
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import Config
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE
from shell.broker import free_port
from tests.streams_groups.word_count import (
    INPUT_PARTITIONS,
    command_lag,
    command_members,
    describe,
    repartition_topic,
    start_word_count,
    tasks_text,
)

MAKE = SampleFactory(cluster="test", collector="test-instance")
CAUGHT_UP_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def streams_broker(broker: Any) -> Iterator[Any]:
    """The session broker with WordCountDemo's input topic (its name is fixed in the demo)."""
    if broker.version < (4, 2, 0):
        pytest.skip(f"streams groups are production-ready from Kafka 4.2 (broker {broker.version_text})")
    KafkaWorkload(broker.bootstrap_servers).create_topic(INPUT_TOPIC, INPUT_PARTITIONS)
    yield broker


def _cycle(config: Config) -> list[Any]:
    collector = AdminCollector(config)
    try:
        result = collector.collect(int(time.time() * 1000), MAKE)
    finally:
        collector.close()
    assert result.ok and result.errors == [], result.errors
    return result.samples


def _lag_caught_up(config: Config, group: str) -> list[Any]:
    """An admin cycle's samples once the group's four partitions are read up to their ends."""
    deadline = time.monotonic() + CAUGHT_UP_TIMEOUT_S
    while True:
        samples = _cycle(config)
        lags = [s.value for s in samples if s.metric == "consumer_lag" and s.group_id == group]
        if len(lags) == 2 * INPUT_PARTITIONS and not any(lags):
            return samples
        assert time.monotonic() < deadline, f"{group} not caught up within {CAUGHT_UP_TIMEOUT_S:.0f} s: {lags}"
        time.sleep(1)


def test_the_reader_sees_a_streams_group_as_the_brokers_tool_does(
    streams_broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str], tmp_path: Path
) -> None:
    broker = streams_broker
    group = unique("wordcount")
    KafkaWorkload(broker.bootstrap_servers).produce(INPUT_TOPIC, {0: 100, 1: 50})
    config = make_config(collect={"groups_allow": [f"^{group}$"], "commit_log": "off", "timeout_s": 10})
    app, running = start_word_count(broker, group, tmp_path / "app")
    try:
        samples = _lag_caught_up(config, group)
        reference_lag = command_lag(broker, group)
        reference_members = command_members(broker, group)
        description = describe(broker, group)
    finally:
        app.stop()

    assert description is not None and description.state == "Stable"
    [member] = description.members
    internal = repartition_topic(group)
    assert description.task_partitions(member.active) == sorted(
        (topic, p) for topic in (INPUT_TOPIC, internal) for p in range(INPUT_PARTITIONS)
    )
    expected = (member.process_id, member.client_id, {"ACTIVE": tasks_text(member.active)})
    assert reference_members == {member.member_id: expected}
    assert running.members[0].client_id == member.client_id

    of_group = [s for s in samples if s.group_id == group]
    group_values = {s.metric: s.value for s in of_group if s.topic is None}
    assert group_values["consumer_group_type"] == GROUP_TYPE_CODE["streams"]
    assert (group_values["consumer_group_state"], group_values["consumer_group_members"]) == (
        GROUP_STATE_CODE["Stable"],
        1,
    )
    owners = {(s.topic, s.partition): (s.client_id, s.member_id) for s in of_group if s.metric == "partition_assigned"}
    assert owners == {tp: (member.client_id, member.member_id) for tp in description.task_partitions(member.active)}
    lag = {(s.topic, s.partition): s.value for s in of_group if s.metric == "consumer_lag"}
    assert lag == reference_lag and set(lag) == set(owners)
    ends = {(s.topic, s.partition): s.value for s in samples if s.metric == "log_end_offset"}
    committed = {(s.topic, s.partition): s.value for s in of_group if s.metric == "committed_offset"}
    assert committed == {tp: ends[tp] for tp in lag}
    assert ends[(INPUT_TOPIC, 0)] >= 100 and ends[(INPUT_TOPIC, 1)] >= 50


def test_a_stopped_streams_app_leaves_its_group_empty_with_its_lag(
    streams_broker: Any, make_config: Callable[..., Config], unique: Callable[[str], str], tmp_path: Path
) -> None:
    broker = streams_broker
    group = unique("wordcount")
    config = make_config(collect={"groups_allow": [f"^{group}$"], "commit_log": "off", "timeout_s": 10})
    app, _ = start_word_count(broker, group, tmp_path / "app")
    try:
        _lag_caught_up(config, group)
    finally:
        app.stop()
    KafkaWorkload(broker.bootstrap_servers).produce(INPUT_TOPIC, {0: 30, 1: 20})

    closed = describe(broker, group)
    assert closed is not None and (closed.state, closed.members) == ("Empty", ())
    of_group = [s for s in _cycle(config) if s.group_id == group]
    assert {s.metric: s.value for s in of_group if s.topic is None}["consumer_group_members"] == 0
    assert not [s for s in of_group if s.metric == "partition_assigned"]
    lag = {(s.topic, s.partition): s.value for s in of_group if s.metric == "consumer_lag"}
    assert lag == {(INPUT_TOPIC, 0): 30, (INPUT_TOPIC, 1): 20, (repartition_topic(group), 0): 0,
                   (repartition_topic(group), 1): 0}  # fmt: skip


def test_a_filter_that_passes_no_streams_group_asks_for_nothing_more(streams_broker: Any) -> None:
    read = read_streams_groups([("127.0.0.1", streams_broker.port)], lambda _: False, time.monotonic() + 10)
    assert (read.errors, read.descriptions, read.without_streams_groups) == ([], {}, 0)


def test_an_unreachable_broker_is_an_error_line_not_an_exception() -> None:
    port = free_port()
    read = read_streams_groups([("127.0.0.1", port)], lambda _: True, time.monotonic() + 2)
    assert len(read.errors) == 1 and read.errors[0].startswith(f"streams groups on 127.0.0.1:{port}: ")


def test_the_embedded_tansu_broker_has_no_streams_groups_and_no_error(tansu: Any) -> None:
    host, port = tansu.bootstrap_servers.rsplit(":", 1)
    read = read_streams_groups([(host, int(port))], lambda _: True, time.monotonic() + 10)
    assert (read.errors, read.descriptions, read.without_streams_groups) == ([], {}, 1)
