"""A Kafka streaming source for Spark, written with the Python Data Source API.

Why it exists: Spark's own `kafka` source lives in a jar that cannot be downloaded here. This
source reads the same records with confluent-kafka and yields the same columns
(KAFKA_RECORD_SCHEMA), so everything downstream is unaware of which source ran.

How offsets flow:
- The driver-side reader (`latestOffset`, `partitions`) only talks to the broker for metadata.
  Offsets are a JSON dict ``{topic: {partition: next_offset}}`` that Spark stores in its
  checkpoint, so a restarted query resumes exactly where the last committed batch ended.
- Each batch becomes one input partition per topic-partition with new records; an executor's
  Python worker assigns that partition, seeks to the start and reads exactly ``[start, end)``.
- A per-batch row cap is split in proportion to each partition's backlog: an even split starves
  the busiest partitions, whose old records then arrive behind the watermark and are dropped.
- An unreachable broker raises :class:`KafkaSourceError` naming the bootstrap servers after a
  bounded number of attempts, instead of librdkafka's silent endless retry.

With the option ``decodeSamplesMaxBytes`` the reader also decodes each batch as lagwatch samples
(``decode.decode_batch``, the function ``parse.py`` runs after any other source) and yields
them packed (``packed.py``): one row per read batch of up to ARROW_BATCH_ROWS records, holding
their DECODED_SCHEMA rows. The records then cross into the JVM once, decoded, and as a few
large values instead of one row each. With ``routeSamplesCluster`` as well, the reader also
routes them to the stateful operator's buckets (``route.py``) and yields ROUTED_DDL rows, which
saves every batch a second Python worker per partition.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from spark_jobs.schema import KAFKA_RECORD_SCHEMA

log = logging.getLogger(__name__)

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

Offsets = dict[str, dict[str, int]]


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
        )


def source_options(
    client: Mapping[str, Any],
    topic: str,
    starting_offsets: str = "earliest",
    max_rows_per_batch: int | None = None,
    timeout_s: float = 10.0,
    retries: int = 2,
    read_timeout_s: float = 120.0,
    decode_max_bytes: int | None = None,
    route: tuple[str, bool] | None = None,
) -> dict[str, str]:
    """Build the option map for `spark.readStream.format(SOURCE_NAME)` from a librdkafka dict.

    ``route`` = (the job's cluster, whether lag samples go to their group's bucket) makes a
    decoding reader route its samples too (``route.py``)."""
    options = {f"{KAFKA_OPTION_PREFIX}{k}": str(v) for k, v in client.items()}
    options.update(topic=topic, startingOffsets=starting_offsets, timeoutS=str(timeout_s), retries=str(retries))
    options["readTimeoutS"] = str(read_timeout_s)
    if max_rows_per_batch:
        options["maxRowsPerBatch"] = str(max_rows_per_batch)
    if decode_max_bytes:
        options["decodeSamplesMaxBytes"] = str(decode_max_bytes)
    if route is not None:
        options["routeSamplesCluster"], options["routeLagSamples"] = route[0], str(route[1]).lower()
    return options


def split_row_cap(backlogs: Mapping[Any, int], cap: int) -> dict[Any, int]:
    """Share `cap` rows between partitions in proportion to their backlog (largest remainder).

    Every partition gets floor(cap * backlog / total); the rows left over go to the largest
    fractional shares. No partition gets more than its backlog, and the shares sum to
    min(cap, total backlog), so a capped batch drains all partitions at the same relative pace.
    """
    total = sum(max(0, b) for b in backlogs.values())
    if total <= cap:
        return {k: max(0, b) for k, b in backlogs.items()}
    shares = {k: cap * max(0, b) // total for k, b in backlogs.items()}
    remainders = sorted(backlogs, key=lambda k: (-((cap * max(0, backlogs[k])) % total), str(k)))
    left = cap - sum(shares.values())
    for key in remainders:
        if left == 0:
            break
        if shares[key] < backlogs[key]:
            shares[key] += 1
            left -= 1
    return shares


class KafkaRangePartition(InputPartition):
    """Read [start, end) of one topic-partition (picklable: sent to an executor)."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


#: Defaults for range reads (a user's own settings win).
#: - fetch.queue.backoff.ms: how long librdkafka waits before it looks again at a full
#:   prefetch queue. At 0 its fetcher thread spun on that check for as long as the reader was
#:   busy decoding, which cost as much CPU as the reader itself (docs/performance.md). 10 ms is
#:   a sliver of the time a reader takes for 20,000 records.
#: - queued.min.messages, max.partition.fetch.bytes: a shallow prefetch. A read stops at its
#:   range's end, but librdkafka keeps fetching ahead and decompresses and parses all it
#:   fetched; with a queue of a million and 50 MB fetches, each range of a capped batch paid
#:   for records far past its end.
_CONSUMER_DEFAULTS = {
    "group.id": "lagwatch-spark-source",
    "log_level": "3",
    "max.partition.fetch.bytes": "1048576",
    "queued.min.messages": "20000",
    "fetch.queue.backoff.ms": "10",
}
#: consume() returns when this many seconds pass or the batch is full; short, because it
#: otherwise waits for a full batch and a range read becomes latency-bound.
_CONSUME_POLL_S = 0.05


def _consumer(client: Mapping[str, str]) -> Any:
    from confluent_kafka import Consumer

    settings = {**_CONSUMER_DEFAULTS, **client, **_CONSUMER_FIXED}
    return Consumer(settings)


class _Metadata:
    """Driver-side broker metadata with bounded retries (topic partitions, watermarks)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._consumer: Any = None

    def _client(self) -> Any:
        if self._consumer is None:
            self._consumer = _consumer(self.options.client)
        return self._consumer

    def _attempt(self, what: str, call: Any) -> Any:
        attempts = self.options.retries + 1
        last: Exception | None = None
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except Exception as exc:  # librdkafka raises KafkaException for timeouts and transport errors
                last = exc
                log.warning("Kafka %s failed (attempt %d/%d): %s", what, attempt, attempts, exc)
        raise KafkaSourceError(
            f"Kafka at {self.options.servers!r} did not answer ({what}) after {attempts} attempts of "
            f"{self.options.timeout_s:g} s each: {last}"
        )

    def partitions(self) -> list[tuple[str, int]]:
        def fetch() -> list[tuple[str, int]]:
            found = []
            for topic in self.options.topics:
                meta = self._client().list_topics(topic, timeout=self.options.timeout_s).topics.get(topic)
                if meta is None or meta.error is not None or not meta.partitions:
                    error = meta.error if meta is not None else "no metadata"
                    raise KafkaSourceError(f"topic {topic!r} not available on {self.options.servers!r}: {error}")
                found.extend((topic, p) for p in sorted(meta.partitions))
            return found

        return self._attempt("list topics", fetch)

    def watermarks(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition

        def fetch() -> dict[tuple[str, int], tuple[int, int]]:
            client = self._client()
            return {
                (t, p): client.get_watermark_offsets(TopicPartition(t, p), timeout=self.options.timeout_s, cached=False)
                for t, p in tps
            }

        return self._attempt("list offsets", fetch)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def _get(offsets: Offsets, topic: str, partition: int) -> int | None:
    value = offsets.get(topic, {}).get(str(partition))
    return None if value is None else int(value)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side plans offset ranges; `read` runs in executors' Python workers."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._metadata: _Metadata | None = None
        self._available_now_target: Offsets | None = None

    @property
    def metadata(self) -> _Metadata:
        if self._metadata is None:
            self._metadata = _Metadata(self.options)
        return self._metadata

    def _current(self) -> dict[tuple[str, int], tuple[int, int]]:
        return self.metadata.watermarks(self.metadata.partitions())

    def initialOffset(self) -> dict:
        pick = 0 if self.options.starting_offsets == "earliest" else 1
        offsets: Offsets = {}
        for (topic, partition), marks in self._current().items():
            offsets.setdefault(topic, {})[str(partition)] = int(marks[pick])
        log.info("Kafka source starts at %s offsets: %s", self.options.starting_offsets, json.dumps(offsets))
        return offsets

    def getDefaultReadLimit(self) -> ReadLimit:
        cap = self.options.max_rows_per_batch
        return ReadMaxRows(cap) if cap else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Freeze the end of `--available-now`: records appended later wait for the next run."""
        target: Offsets = {}
        for (topic, partition), (_, high) in self._current().items():
            target.setdefault(topic, {})[str(partition)] = int(high)
        self._available_now_target = target
        log.info("available-now target offsets: %s", json.dumps(target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin, highs = self._ranges(start)
        backlog = {tp: max(0, highs[tp] - begin[tp]) for tp in highs}
        take = split_row_cap(backlog, int(limit.max_rows)) if isinstance(limit, ReadMaxRows) else backlog
        end: Offsets = {}
        for (topic, partition), first in begin.items():
            end.setdefault(topic, {})[str(partition)] = first + take.get((topic, partition), 0)
        return end

    def _ranges(self, start: Offsets) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        """Where each partition resumes and how far it may go (new partitions start at earliest)."""
        begin: dict[tuple[str, int], int] = {}
        highs: dict[tuple[str, int], int] = {}
        for (topic, partition), (low, high) in self._current().items():
            resume = _get(start, topic, partition)
            if resume is None:
                log.info("new partition %s-%d picked up from its earliest offset %d", topic, partition, low)
                resume = low
            elif high < resume:
                log.error(
                    "partition %s-%d end offset %d is behind the checkpoint's %d (topic recreated or broker data "
                    "lost); reading it again from its earliest offset %d",
                    topic,
                    partition,
                    high,
                    resume,
                    low,
                )
                resume = low
            begin[(topic, partition)] = resume
            target = self._target_for(topic, partition, high)
            highs[(topic, partition)] = max(resume, target)
        for topic, parts in start.items():
            for partition, offset in parts.items():
                begin.setdefault((topic, int(partition)), int(offset))
        return begin, highs

    def _target_for(self, topic: str, partition: int, high: int) -> int:
        if self._available_now_target is None:
            return high
        frozen = _get(self._available_now_target, topic, partition)
        return high if frozen is None else min(high, frozen)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        ranges: list[InputPartition] = []
        for topic, parts in end.items():
            for partition, stop in parts.items():
                first = _get(start, topic, int(partition))
                if first is None or int(stop) < first:
                    first = 0  # new partition, or a reset detected in latestOffset: read from its earliest
                if int(stop) > first:
                    ranges.append(KafkaRangePartition(topic, int(partition), first, int(stop)))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRangePartition)
        yield from read_range(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets Spark just committed live in its checkpoint."""

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()


def read_range(options: SourceOptions, part: KafkaRangePartition) -> Iterator[Any]:
    """Read exactly [start, end) of one partition as Arrow batches, then stop.

    Gaps (compacted or transaction-marker offsets) are fine: the read ends at the first record
    at or past `end`, or at the partition end once it is at or past `end`. If nothing arrives for
    `read_timeout_s`, the read fails naming the servers and the range instead of hanging.
    """
    from confluent_kafka import TopicPartition

    consumer = _consumer(options.client)
    batch = _ArrowBatch(part.topic, part.partition)
    with _cyclic_gc_paused(), contextlib.closing(consumer):
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


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector off for one range read (reference counting still frees everything).

    Why: a read allocates about ten tracked objects per record (librdkafka messages, timestamp
    tuples, list growth), so the collector runs every few hundred records and, as the read's
    lists age, ever more full passes over the worker's whole heap (a quarter of the read's CPU,
    docs/performance.md). The read makes no reference cycles of its own
    (``gc.collect()`` after a read of 45,000 records finds nothing); any that others make are
    collected once it ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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


class KafkaDataSource(DataSource):
    """`spark.readStream.format("lagwatch_kafka").option("topic", …).option("kafka.bootstrap.servers", …)`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType | str:
        options = SourceOptions.parse(self.options)
        if options.decode_max_bytes is None:
            return KAFKA_RECORD_SCHEMA
        from spark_jobs.packed import PACKED_DDL
        from spark_jobs.route import ROUTED_DDL

        return PACKED_DDL if options.route_cluster is None else ROUTED_DDL

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options))


def register(spark: Any) -> None:
    """Make `format("lagwatch_kafka")` available in this SparkSession."""
    spark.dataSource.register(KafkaDataSource)
