"""The executor side of the Kafka source: read one offset range with a consumer, hand it to Spark.

Why a module of its own: PySpark pickles the stream reader and its input partitions to the
executors' Python workers, which then run `read_range` for each range. What they need (the
parsed options, the range, the consumer and its settings, the Arrow batching, the decoding and
routing a reader does itself) lives here; the planning on the driver (`kafka_source.py`) needs
none of it beyond the options, the range type and a consumer for metadata.

A read covers exactly ``[start, end)`` of one topic-partition and yields Arrow batches of up to
ARROW_BATCH_ROWS records. With the option ``decodeSamplesMaxBytes`` the reader also decodes each
batch as lagwatch samples (``decode.decode_batch``, the function ``parse.py`` runs after any other
source) and yields them packed (``packed.py``): one row per read batch, holding its
DECODED_SCHEMA rows. The records then cross into the JVM once, decoded, and as a few large values
instead of one row each. With ``routeSamplesCluster`` as well, the reader also routes them to the
stateful operator's buckets (``route.py``) and yields ROUTED_DDL rows, which saves every batch a
second Python worker per partition.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from lagwatch.gc_pause import cyclic_gc_paused, freeze_startup_objects
from lagwatch.kafka import SPARK_SOURCE_GROUP
from spark_jobs.schema import KAFKA_RECORD_SCHEMA

SOURCE_NAME = "lagwatch_kafka"
#: Options starting with this prefix are librdkafka settings (as with Spark's native source).
KAFKA_OPTION_PREFIX = "kafka."
#: Records per Arrow batch handed to Spark by a reader.
ARROW_BATCH_ROWS = 20_000
#: Settings every consumer here needs: offsets live in Spark's checkpoint, never in Kafka.
_CONSUMER_FIXED = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    "auto.offset.reset": "earliest",
}


class KafkaSourceError(RuntimeError):
    """The source cannot do its job (broker unreachable, topic missing, reader stalled)."""


@dataclass(frozen=True)
class SourceOptions:
    """The data source options, parsed once (Spark hands them over as strings)."""

    topics: tuple[str, ...]
    client: dict[str, str]
    starting_offsets: str = "earliest"
    max_rows_per_batch: int | None = None
    timeout_s: float = 10.0
    retries: int = 2
    read_timeout_s: float = 120.0
    #: When set, yield decode.DECODED_SCHEMA rows packed (records over this many bytes are dead letters).
    decode_max_bytes: int | None = None
    #: When set (with decoding), yield route.ROUTED_DDL rows instead: this names a dead letter's
    #: cluster when the record cannot, and route_lag sends lag samples to their group's bucket.
    route_cluster: str | None = None
    route_lag: bool = False
    #: While the topic's end offsets still move, a trigger waits up to this long for them to stand
    #: still (``kafka_source.py`` says why); 0 turns the wait off.
    settle_max_s: float = 1.0

    @property
    def servers(self) -> str:
        return self.client.get("bootstrap.servers", "")

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        topics = tuple(t.strip() for t in options.get("topic", options.get("subscribe", "")).split(",") if t.strip())
        if not topics:
            raise KafkaSourceError(f"{SOURCE_NAME}: option 'topic' is required (one topic or a comma list)")
        client = {k[len(KAFKA_OPTION_PREFIX) :]: v for k, v in options.items() if k.startswith(KAFKA_OPTION_PREFIX)}
        if not client.get("bootstrap.servers"):
            raise KafkaSourceError(f"{SOURCE_NAME}: option 'kafka.bootstrap.servers' is required")
        starting = options.get("startingOffsets", "earliest")
        if starting not in ("earliest", "latest"):
            raise KafkaSourceError(f"{SOURCE_NAME}: startingOffsets must be earliest or latest, not {starting!r}")
        cap = options.get("maxRowsPerBatch")
        return cls(
            topics=topics,
            client=client,
            starting_offsets=starting,
            max_rows_per_batch=int(cap) if cap else None,
            timeout_s=float(options.get("timeoutS", 10)),
            retries=int(options.get("retries", 2)),
            read_timeout_s=float(options.get("readTimeoutS", 120)),
            decode_max_bytes=int(options["decodeSamplesMaxBytes"]) if options.get("decodeSamplesMaxBytes") else None,
            route_cluster=options.get("routeSamplesCluster"),
            route_lag=options.get("routeLagSamples", "false").lower() == "true",
            settle_max_s=float(options.get("settleMaxS", 1.0)),
        )


class KafkaRangePartition(InputPartition):
    """Read [start, end) of one topic-partition (picklable: sent to an executor)."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


class KafkaRangeGroup(InputPartition):
    """Ranges of several topic-partitions read one after another by one task (picklable).

    Why: each task of a micro-batch costs a round trip to a Python worker whatever it reads, so
    a live batch of a few hundred samples spread over every partition of the samples topic
    reads them in one task; a backlog still gets a task per partition (:func:`grouped_ranges`).
    """

    def __init__(self, ranges: list[KafkaRangePartition]) -> None:
        super().__init__(tuple(part.value for part in ranges))
        self.ranges = ranges

    @property
    def records(self) -> int:
        return sum(part.end - part.start for part in self.ranges)


def grouped_ranges(ranges: list[KafkaRangePartition], records_per_task: int) -> list[KafkaRangeGroup]:
    """The ranges in groups of at least `records_per_task` offsets (the last one may hold fewer), in
    their order: a range that size or larger is a group of its own."""
    groups: list[KafkaRangeGroup] = []
    current: list[KafkaRangePartition] = []
    for part in ranges:
        current.append(part)
        if sum(p.end - p.start for p in current) >= records_per_task:
            groups.append(KafkaRangeGroup(current))
            current = []
    if current:
        groups.append(KafkaRangeGroup(current))
    return groups


def read_ranges(options: SourceOptions, group: KafkaRangeGroup) -> Iterator[Any]:
    """Each range of the group, as :func:`read_range` reads one."""
    freeze_startup_objects()  # runs in a Python worker: its imports leave the daemon's per-task collections
    for part in group.ranges:
        yield from read_range(options, part)


#: Defaults for range reads (a user's own settings win).
#: - fetch.queue.backoff.ms: how long librdkafka waits before it looks again at a full
#:   prefetch queue. At 0 its fetcher thread spins on that check for as long as the reader is
#:   busy decoding, burning CPU the reader needs (bench/RECORDS.md, "Spark job"). 10 ms is
#:   a sliver of the time a reader takes for 20,000 records.
#: - queued.min.messages, max.partition.fetch.bytes: a shallow prefetch. A read stops at its
#:   range's end, but librdkafka keeps fetching ahead and decompresses and parses all it
#:   fetched; with a deep queue and large fetches, each range of a capped batch would pay for
#:   records far past its end.
_CONSUMER_DEFAULTS = {
    "group.id": SPARK_SOURCE_GROUP,
    "log_level": "3",
    "max.partition.fetch.bytes": "1048576",
    "queued.min.messages": "20000",
    "fetch.queue.backoff.ms": "10",
}
#: consume() returns when this many seconds pass or the batch is full; short, because it
#: otherwise waits for a full batch and a range read becomes latency-bound.
_CONSUME_POLL_S = 0.05


def new_consumer(client: Mapping[str, str]) -> Any:
    from confluent_kafka import Consumer

    settings = {**_CONSUMER_DEFAULTS, **client, **_CONSUMER_FIXED}
    return Consumer(settings)


def read_range(options: SourceOptions, part: KafkaRangePartition) -> Iterator[Any]:
    """Read exactly [start, end) of one partition as Arrow batches, then stop.

    Gaps (compacted or transaction-marker offsets) are fine: the read ends at the first record
    at or past `end`, or at the partition end once it is at or past `end`. If nothing arrives for
    `read_timeout_s`, the read fails naming the servers and the range instead of hanging.
    """
    from confluent_kafka import TopicPartition

    consumer = new_consumer(options.client)
    batch = _ArrowBatch(part.topic, part.partition)
    # About ten tracked objects per record (docs/rollups.md has what the pause saves); a read
    # makes no reference cycles of its own.
    with cyclic_gc_paused(), contextlib.closing(consumer):
        consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
        position, last_progress = part.start, time.monotonic()
        while position < part.end:
            messages = consumer.consume(
                num_messages=min(ARROW_BATCH_ROWS, part.end - position), timeout=_CONSUME_POLL_S
            )
            if not messages and time.monotonic() - last_progress > options.read_timeout_s:
                raise KafkaSourceError(
                    f"no records from Kafka at {options.servers!r} for {options.read_timeout_s:g} s while reading "
                    f"{part.topic}-{part.partition} [{position}, {part.end})"
                )
            records, offsets, reached_end = _in_range(messages, part, options.servers)
            batch.extend(records, offsets)
            if offsets:
                position = offsets[-1] + 1
            if reached_end:
                position = part.end
            if messages:
                last_progress = time.monotonic()
            if batch.rows >= ARROW_BATCH_ROWS:
                yield _handed_over(batch.flush(), options)
        if batch.rows:
            yield _handed_over(batch.flush(), options)


def _in_range(messages: list[Any], part: KafkaRangePartition, servers: str) -> tuple[list[Any], list[int], bool]:
    """(the records of ``messages`` inside the range, their offsets, whether the range's end was reached).

    Whole lists at a time, not a branch per record: this loop runs for every record read.
    A partition-EOF event at or past the end ends the range too; any other error fails the read.
    """
    from confluent_kafka import KafkaError

    reached_end = False
    if any(message.error() is not None for message in messages):
        records = []
        for message in messages:
            error = message.error()
            if error is None:
                records.append(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                reached_end = reached_end or message.offset() >= part.end
            else:
                raise KafkaSourceError(f"reading {part.topic}-{part.partition} from {servers!r}: {error}")
        messages = records
    offsets = [message.offset() for message in messages]
    if offsets and offsets[-1] >= part.end:  # a partition's offsets only grow
        keep = bisect.bisect_left(offsets, part.end)
        return messages[:keep], offsets[:keep], True
    return messages, offsets, reached_end


def _handed_over(records: Any, options: SourceOptions) -> Any:
    """The batch as Spark gets it: raw records, its decoded samples packed in one row, or those
    routed to the state buckets (one packed row per bucket)."""
    if options.decode_max_bytes is None:
        return records
    import pyarrow as pa

    from spark_jobs import route
    from spark_jobs.decode import decode_batch
    from spark_jobs.packed import pack

    decoded = decode_batch(records, options.decode_max_bytes)
    if options.route_cluster is None:
        return pack(decoded)
    return route.route(pa.Table.from_batches([decoded]), options.route_cluster, options.route_lag)


class _ArrowBatch:
    """Column buffers for one partition's records, flushed as a pyarrow RecordBatch."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._reset()

    def _reset(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[tuple[int, int]] = []

    @property
    def rows(self) -> int:
        return len(self.offsets)

    def extend(self, messages: list[Any], offsets: list[int]) -> None:
        self.keys += [message.key() for message in messages]
        self.values += [message.value() for message in messages]
        self.offsets += offsets
        self.timestamps += [message.timestamp() for message in messages]

    def flush(self) -> Any:
        import numpy as np
        import pyarrow as pa

        rows = self.rows
        kind_and_millis = np.array(self.timestamps, np.int64).reshape(rows, 2)
        # librdkafka's timestamp type 0 is "not available"; a negative time is none either
        no_time = (kind_and_millis[:, 0] == 0) | (kind_and_millis[:, 1] < 0)
        data = pa.RecordBatch.from_arrays(
            [
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                pa.array([self.topic] * rows, pa.string()),
                pa.array([self.partition] * rows, pa.int32()),
                pa.array(self.offsets, pa.int64()),
                pa.array(kind_and_millis[:, 1] * 1000, pa.int64(), mask=no_time).cast(pa.timestamp("us", tz="UTC")),
            ],
            schema=arrow_schema(),
        )
        self._reset()
        return data


@functools.cache
def arrow_schema() -> Any:
    """Exactly the Arrow schema Spark expects for KAFKA_RECORD_SCHEMA (built lazily: the driver-side
    planner never needs pyarrow)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(KAFKA_RECORD_SCHEMA, timezone="UTC")
