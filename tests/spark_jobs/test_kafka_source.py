"""The confluent-kafka streaming source on a real SparkSession and the real tansu broker."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException

from shell.broker import free_port
from spark_jobs import kafka_source
from spark_jobs.kafka_source import split_row_cap
from spark_jobs.packed import unpack


def test_row_cap_is_split_in_proportion_to_backlog() -> None:
    shares = split_row_cap({"busy": 9_000, "quiet": 1_000, "idle": 0}, cap=1_000)
    assert shares == {"busy": 900, "quiet": 100, "idle": 0}
    uneven = split_row_cap({"a": 5, "b": 3, "c": 2}, cap=7)
    assert sum(uneven.values()) == 7
    assert all(uneven[k] <= v for k, v in {"a": 5, "b": 3, "c": 2}.items())
    assert uneven["a"] >= uneven["b"] >= uneven["c"] >= 1
    assert split_row_cap({"a": 4, "b": 2}, cap=100) == {"a": 4, "b": 2}, "under the cap everything is read"


def _read_all(spark: Any, options: dict[str, str], checkpoint: Path) -> list[list[tuple[int, int]]]:
    """Run the source with trigger(availableNow) and return each batch's (partition, offset) rows."""
    batches: list[list[tuple[int, int]]] = []

    def keep(batch: Any, _batch_id: int) -> None:
        batches.append([(r.partition, r.offset) for r in batch.select("partition", "offset").collect()])

    kafka_source.register(spark)
    frame = spark.readStream.format(kafka_source.SOURCE_NAME).options(**options).load()
    query = (
        frame.writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return [b for b in batches if b]


def test_reads_exact_ranges_and_resumes_after_restart(
    spark: Any, broker: Any, kafka: Any, unique: Any, tmp_path: Path
) -> None:
    topic = unique("source")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 30, 1: 10})
    options = kafka_source.source_options({"bootstrap.servers": broker.bootstrap_servers}, topic, max_rows_per_batch=8)
    checkpoint = tmp_path / "checkpoint"

    first = _read_all(spark, options, checkpoint)
    assert len(first) == 5, "40 records at 8 per batch"
    assert all(len(b) <= 8 for b in first)
    # proportional split: partition 0 holds 3/4 of the backlog, so it gets 6 of every 8 rows
    assert sum(1 for p, _ in first[0] if p == 0) == 6
    seen = [row for batch in first for row in batch]
    assert sorted(seen) == [(0, o) for o in range(30)] + [(1, o) for o in range(10)]

    kafka.produce(topic, {0: 4, 1: 3})
    second = _read_all(spark, options, checkpoint)
    resumed = sorted(row for batch in second for row in batch)
    assert resumed == [(0, o) for o in range(30, 34)] + [(1, o) for o in range(10, 13)], "nothing lost or repeated"


def test_starting_offsets_latest_skips_existing_records(
    spark: Any, broker: Any, kafka: Any, unique: Any, tmp_path: Path
) -> None:
    topic = unique("latest")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, {0: 5})
    options = kafka_source.source_options(
        {"bootstrap.servers": broker.bootstrap_servers}, topic, starting_offsets="latest"
    )
    assert _read_all(spark, options, tmp_path / "checkpoint") == [], "the 5 existing records are skipped"


def test_unreachable_broker_fails_naming_the_servers(spark: Any, tmp_path: Path) -> None:
    servers = f"127.0.0.1:{free_port()}"
    options = kafka_source.source_options({"bootstrap.servers": servers}, "nowhere", timeout_s=1, retries=1)
    with pytest.raises(StreamingQueryException) as failure:
        _read_all(spark, options, tmp_path / "checkpoint")
    message = str(failure.value)
    assert servers in message
    assert "did not answer" in message


def _rows_read_now(spark: Any, options: dict[str, str], checkpoint: Path) -> tuple[list[str], list[Any]]:
    """Run the source with trigger(availableNow): its columns and every row it yielded."""
    rows: list[Any] = []
    kafka_source.register(spark)
    frame = spark.readStream.format(kafka_source.SOURCE_NAME).options(**options).load()
    query = (
        frame.writeStream.foreachBatch(lambda batch, _id: rows.extend(batch.collect()))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return frame.columns, rows


def test_with_decoding_on_the_reader_yields_packed_decoded_samples_and_dead_letters(
    spark: Any, broker: Any, kafka: Any, unique: Any, tmp_path: Path
) -> None:
    from tests.spark_jobs.samples_io import gauge_samples, produce_values

    topic = unique("decoded")
    kafka.create_topic(topic, 1)
    samples = gauge_samples(30, start_ms=1_767_225_600_000)
    values = [(s.key(), s.to_json()) for s in samples]
    values[7] = (b"k", b"not json at all")
    produce_values(broker.bootstrap_servers, topic, values)
    options = kafka_source.source_options({"bootstrap.servers": broker.bootstrap_servers}, topic, decode_max_bytes=4096)
    columns, rows = _rows_read_now(spark, options, tmp_path / "checkpoint")

    assert columns == ["samples"]
    assert len(rows) == 1, "30 records read in one batch travel as one packed row"
    rows = [SimpleNamespace(**record) for record in unpack(row.samples for row in rows).to_pylist()]
    assert len(rows) == 30
    (dead,) = [r for r in rows if r.error is not None]
    assert (dead.error, dead.raw, dead.source_topic, dead.source_offset) == (
        "not a JSON object",
        "not json at all",
        topic,
        7,
    )
    good = [r for r in rows if r.error is None]
    expected = [s for i, s in enumerate(samples) if i != 7]
    assert sorted((r.id, r.value, r.broker) for r in good) == sorted((s.id, s.value, s.broker) for s in expected)
    assert all(r.source_offset is None and r.raw is None for r in good)


def test_with_routing_on_the_reader_yields_each_bucket_once_with_its_records(
    spark: Any, broker: Any, kafka: Any, unique: Any, tmp_path: Path
) -> None:
    """The job's source: decoded and routed in the reader, one packed row per state bucket.

    The samples are under-replicated partitions of 8 brokers, broker event samples: each also
    reaches every bucket as a BROKER copy, which the record counts leave out."""
    from spark_jobs import route
    from tests.spark_jobs.samples_io import gauge_samples, produce_values

    topic = unique("routed")
    kafka.create_topic(topic, 1)
    samples = gauge_samples(40, start_ms=1_767_225_600_000, series=8)
    values = [(s.key(), s.to_json()) for s in samples] + [(b"k", b"not json at all")]
    produce_values(broker.bootstrap_servers, topic, values)
    client = {"bootstrap.servers": broker.bootstrap_servers}
    options = kafka_source.source_options(client, topic, decode_max_bytes=4096, route=("job", True))
    columns, rows = _rows_read_now(spark, options, tmp_path / "checkpoint")

    assert columns == ["bucket", "event_time", "records", "samples"]
    assert len({row.bucket for row in rows}) == len(rows) == route.STATE_BUCKETS, "one row per bucket"
    assert sum(row.records for row in rows) == 41
    records = unpack(row.samples for row in rows).to_pylist()
    assert sorted(r["value"] for r in records if r["role"] == route.METRIC) == sorted(s.value for s in samples)
    copies = sorted(r["value"] for r in records if r["role"] == route.BROKER)
    assert copies == sorted(s.value for s in samples for _ in range(route.STATE_BUCKETS))
    (dead,) = [json.loads(r["dead_letter"]) for r in records if r["role"] == route.DEAD]
    assert (dead["error"], dead["source_offset"], dead["cluster"]) == ("not a JSON object", 40, "job")


def _burst_and_look(servers: str, topic: str, settle_max_s: float) -> tuple[int, int]:
    """Produce 60 records one every 20 ms from a thread; 0.3 s in, ask the driver-side reader for
    this trigger's end offset. Returns (its end, the records produced by then)."""
    import threading
    import time

    from confluent_kafka import Producer

    from spark_jobs.kafka_source_reader import SourceOptions

    produced: list[int] = []
    producer = Producer({"bootstrap.servers": servers})

    def burst() -> None:
        for n in range(60):
            producer.produce(topic, value=b"%d" % n, partition=0)
            producer.flush(5)
            produced.append(n)
            time.sleep(0.02)

    options = kafka_source.source_options({"bootstrap.servers": servers}, topic, settle_max_s=settle_max_s)
    reader = kafka_source.KafkaStreamReader(SourceOptions.parse(options))
    start = reader.initialOffset()
    sender = threading.Thread(target=burst)
    sender.start()
    time.sleep(0.3)
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    seen = len(produced)
    sender.join()
    reader.stop()
    return end[topic]["0"], seen


def test_a_trigger_waits_for_a_burst_to_end_so_a_cycle_is_one_batch(broker: Any, kafka: Any, unique: Any) -> None:
    """A collector's burst is taken whole: the trigger looks again until the end offsets rest."""
    waited = unique("settle")
    kafka.create_topic(waited, 1)
    end, produced_by_then = _burst_and_look(broker.bootstrap_servers, waited, settle_max_s=10)
    assert end == 60, f"the trigger took {end} of the burst's 60 records"
    assert produced_by_then == 60

    at_once = unique("no-settle")
    kafka.create_topic(at_once, 1)
    end, produced_by_then = _burst_and_look(broker.bootstrap_servers, at_once, settle_max_s=0)
    assert 0 < end < 60, f"without the wait a trigger inside the burst splits it (took {end})"
