"""StreamsGroupDescribe answers Kafka writes but a WordCountDemo never makes (a member with an
interactive-query endpoint and standby tasks, a group without a topology), decoded byte for
byte, and the membership samples they give: only active tasks own partitions."""

from __future__ import annotations

from collectors.base import SampleFactory
from collectors.kafka_protocol.wire import Reader, Writer
from collectors.streams_groups.reader import StreamsGroupsRead
from collectors.streams_groups.requests import decode_streams_group_describe
from collectors.streams_groups.samples import streams_group_samples
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE

MAKE = SampleFactory(cluster="test", collector="test-instance")


def _tasks(writer: Writer, tasks: dict[str, list[int]]) -> None:
    def task(w: Writer, item: tuple[str, list[int]]) -> None:
        w.compact_string(item[0]).compact_array(item[1], Writer.int32).tagged_fields()

    writer.compact_array(list(tasks.items()), task)


def _assignment(writer: Writer, active: dict[str, list[int]], standby: dict[str, list[int]]) -> None:
    _tasks(writer, active)
    _tasks(writer, standby)
    _tasks(writer, {})  # warm-up
    writer.tagged_fields()


def _member(writer: Writer, member: tuple[str, dict[str, list[int]], dict[str, list[int]]]) -> None:
    member_id, active, standby = member
    writer.compact_string(member_id).int32(7).compact_string("static-1").compact_string(None)
    writer.compact_string(f"client-{member_id}").compact_string("/10.0.0.1").int32(1).compact_string("process-1")
    writer.int8(1).compact_string("app-host").int16(-1).tagged_fields()  # endpoint present, port 65535
    writer.compact_array([("rack", "a")], lambda w, kv: w.compact_string(kv[0]).compact_string(kv[1]).tagged_fields())
    writer.compact_array([], Writer.int32).compact_array([], Writer.int32)  # task offsets, task end offsets
    _assignment(writer, active, standby)
    _assignment(writer, active, {})  # target
    writer.boolean(False).tagged_fields()


def _topic_info(writer: Writer, name: str) -> None:
    writer.compact_string(name).int32(2).int16(1).compact_array([], Writer.int32).tagged_fields()


def _subtopology(writer: Writer, item: tuple[str, list[str], list[str]]) -> None:
    subtopology_id, sources, repartition_sources = item
    writer.compact_string(subtopology_id).compact_array(sources, Writer.compact_string)
    writer.compact_array([], Writer.compact_string)  # repartition sink topics
    writer.compact_array(["changelog"], _topic_info).compact_array(repartition_sources, _topic_info).tagged_fields()


def _response() -> bytes:
    writer = Writer().int32(0).uvarint(3)  # throttle time, two groups
    writer.int16(0).compact_string(None).compact_string("app").compact_string("Stable").int32(5).int32(5)
    writer.int8(1).int32(2)  # topology present, its epoch
    writer.compact_array([("0", ["in-a", "in-b"], []), ("1", [], ["app-repartition"])], _subtopology).tagged_fields()
    writer.compact_array([("m2", {"1": [0, 1]}, {"0": [0]}), ("m1", {"0": [0, 1]}, {"1": [1]})], _member)
    writer.int32(-(2**31)).tagged_fields()
    writer.int16(69).compact_string("no such group").compact_string("gone").compact_string("Dead").int32(-1)
    writer.int32(-1).int8(-1)  # topology null
    writer.compact_array([], _member).int32(-(2**31)).tagged_fields()
    return writer.tagged_fields().bytes()


def test_a_described_group_decodes_and_only_active_tasks_own_partitions() -> None:
    reader = Reader(_response())
    app, gone = decode_streams_group_describe(reader)
    assert reader.remaining == 0
    assert (gone.group_id, gone.error_code, gone.state, gone.subtopologies, gone.members) == (
        "gone",
        69,
        "Dead",
        None,
        (),
    )
    assert (app.state, app.group_epoch, [m.member_id for m in app.members]) == ("Stable", 5, ["m2", "m1"])
    m2, m1 = app.members
    assert (m1.instance_id, m1.client_id, m1.host, m1.process_id) == ("static-1", "client-m1", "/10.0.0.1", "process-1")
    assert app.task_partitions(m1.active) == [("in-a", 0), ("in-a", 1), ("in-b", 0), ("in-b", 1)]
    assert app.task_partitions(m2.standby) == [("in-a", 0), ("in-b", 0)]

    samples, errors = streams_group_samples(
        StreamsGroupsRead(descriptions={"app": app, "gone": gone}), lambda topic: topic != "in-b", 1000, MAKE
    )
    assert errors == ["streams group gone: GROUP_ID_NOT_FOUND (no such group)"]
    group = {s.metric: s.value for s in samples if s.topic is None}
    assert group == {
        "consumer_group_state": GROUP_STATE_CODE["Stable"],
        "consumer_group_members": 2,
        "consumer_group_type": GROUP_TYPE_CODE["streams"],
    }
    owners = {(s.topic, s.partition): s.member_id for s in samples if s.metric == "partition_assigned"}
    assert owners == {("in-a", 0): "m1", ("in-a", 1): "m1", ("app-repartition", 0): "m2", ("app-repartition", 1): "m2"}
    assert {s.group_id for s in samples} == {"app"}
