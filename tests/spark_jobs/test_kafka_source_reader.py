"""The Kafka source's executor side: range reads on the real tansu broker, without Spark."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from spark_jobs import kafka_source, kafka_source_reader


def test_a_range_read_yields_exactly_its_records_with_keys_and_kafka_timestamps(
    broker: Any, kafka: Any, unique: Any
) -> None:
    """read_range on the real broker: offsets [2, 7) of 10, each record's key, value and time intact."""
    from tests.spark_jobs.samples_io import produce_values

    topic = unique("range")
    kafka.create_topic(topic, 1)
    base_ms = 1_790_000_000_000
    values = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(10)]
    produce_values(broker.bootstrap_servers, topic, values, timestamps_ms=[base_ms + i for i in range(10)])
    options = kafka_source_reader.SourceOptions.parse(
        kafka_source.source_options({"bootstrap.servers": broker.bootstrap_servers}, topic)
    )

    batches = list(kafka_source_reader.read_range(options, kafka_source_reader.KafkaRangePartition(topic, 0, 2, 7)))
    rows = [row for batch in batches for row in batch.to_pylist()]

    assert [row["offset"] for row in rows] == [2, 3, 4, 5, 6]
    assert [(row["key"], row["value"]) for row in rows] == values[2:7]
    assert [int(row["timestamp"].timestamp() * 1000) for row in rows] == [base_ms + i for i in range(2, 7)]
    assert {(row["topic"], row["partition"]) for row in rows} == {(topic, 0)}


def test_a_range_read_pauses_the_cycle_collector_only_while_it_runs(
    broker: Any, kafka: Any, unique: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector is off between the read's batches and back on once the read ends or is
    abandoned; a worker that had it off keeps it off."""
    from tests.spark_jobs.samples_io import produce_values

    topic = unique("gc")
    kafka.create_topic(topic, 1)
    produce_values(broker.bootstrap_servers, topic, [(None, f"v{i}".encode()) for i in range(4)])
    options = kafka_source_reader.SourceOptions.parse(
        kafka_source.source_options({"bootstrap.servers": broker.bootstrap_servers}, topic)
    )
    monkeypatch.setattr(kafka_source_reader, "ARROW_BATCH_ROWS", 1)
    whole = kafka_source_reader.KafkaRangePartition(topic, 0, 0, 4)

    during = [gc.isenabled() for _ in kafka_source_reader.read_range(options, whole)]
    assert during == [False] * 4
    assert gc.isenabled()

    abandoned = kafka_source_reader.read_range(options, whole)
    next(abandoned)
    abandoned.close()
    assert gc.isenabled()

    gc.disable()
    try:
        assert sum(batch.num_rows for batch in kafka_source_reader.read_range(options, whole)) == 4
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_small_ranges_share_a_task_and_a_large_one_has_its_own() -> None:
    """A live batch (a few records in each partition) is one task; a backlog a task per partition."""
    live = [kafka_source_reader.KafkaRangePartition("samples", p, 100, 130) for p in range(6)]
    [group] = kafka_source_reader.grouped_ranges(live, 50_000)
    assert (group.ranges, group.records) == (live, 180)

    backlog = [kafka_source_reader.KafkaRangePartition("samples", p, 0, 60_000 + p) for p in range(3)]
    mixed = [*backlog, kafka_source_reader.KafkaRangePartition("samples", 3, 0, 10)]
    groups = kafka_source_reader.grouped_ranges(mixed, 50_000)
    assert [[(r.partition, r.end) for r in g.ranges] for g in groups] == [
        [(0, 60_000)],
        [(1, 60_001)],
        [(2, 60_002)],
        [(3, 10)],
    ]


def test_one_task_reads_every_range_of_its_group(broker: Any, kafka: Any, unique: Any) -> None:
    from tests.spark_jobs.samples_io import produce_values

    topic = unique("ranges")
    kafka.create_topic(topic, 2)
    for partition in (0, 1):
        produce_values(
            broker.bootstrap_servers, topic, [(None, f"p{partition}-{i}".encode()) for i in range(5)], partition
        )
    options = kafka_source_reader.SourceOptions.parse(
        kafka_source.source_options({"bootstrap.servers": broker.bootstrap_servers}, topic)
    )
    ranges = [
        kafka_source_reader.KafkaRangePartition(topic, 0, 1, 4),
        kafka_source_reader.KafkaRangePartition(topic, 1, 0, 5),
    ]
    [group] = kafka_source_reader.grouped_ranges(ranges, kafka_source.RECORDS_PER_TASK)

    rows = [row for batch in kafka_source_reader.read_ranges(options, group) for row in batch.to_pylist()]

    assert [(row["partition"], row["offset"], row["value"]) for row in rows] == [
        *((0, i, f"p0-{i}".encode()) for i in range(1, 4)),
        *((1, i, f"p1-{i}".encode()) for i in range(5)),
    ]
