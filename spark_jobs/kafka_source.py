"""A Kafka streaming source for Spark, written with the Python Data Source API: its driver side.

Why it exists: Spark's own `kafka` source lives in a jar that cannot be downloaded here. This
source reads the same records with confluent-kafka and yields the same columns
(KAFKA_RECORD_SCHEMA), so everything downstream is unaware of which source ran.

How offsets flow:
- The driver-side reader (`latestOffset`, `partitions`, this module) only talks to the broker
  for metadata. Offsets are a JSON dict ``{topic: {partition: next_offset}}`` that Spark stores
  in its checkpoint, so a restarted query resumes exactly where the last committed batch ended.
- Each batch becomes one range per topic-partition with new records, and the ranges are grouped
  into input partitions of at least RECORDS_PER_TASK records; an executor's Python worker reads
  each range of its group exactly, ``[start, end)`` (``kafka_source_reader.py``, which also
  decodes and routes the records when asked).
- A per-batch row cap is split in proportion to each partition's backlog: an even split starves
  the busiest partitions, whose old records then arrive behind the watermark and are dropped.
- A trigger waits for a burst to end. A collector publishes a cycle's samples in a burst, and a
  trigger that fell inside one would split the cycle over two batches, each paying the job's
  cost per batch (state commit, every touched bucket's state, lake files) and writing the
  cycle's groups twice. So while the topic's end offsets still move, `latestOffset` looks
  again every SETTLE_POLL_S until they stand still, for at most `settleMaxS` (default 1 s):
  a topic that never rests is read at least once a trigger plus that bound.
- An unreachable broker raises :class:`KafkaSourceError` naming the bootstrap servers after a
  bounded number of attempts, instead of librdkafka's silent endless retry.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from spark_jobs.kafka_source_reader import (
    KAFKA_OPTION_PREFIX,
    SOURCE_NAME,
    KafkaRangeGroup,
    KafkaRangePartition,
    KafkaSourceError,
    SourceOptions,
    grouped_ranges,
    new_consumer,
    read_ranges,
)
from spark_jobs.schema import KAFKA_RECORD_SCHEMA

log = logging.getLogger(__name__)

Offsets = dict[str, dict[str, int]]
#: Offsets one task of a batch reads before the next task is planned: a live batch (a collector
#: cycle's samples) is one task, a backlog a task per partition of the samples topic.
RECORDS_PER_TASK = 50_000
#: How often a trigger looks again at end offsets that are still moving (module docstring).
SETTLE_POLL_S = 0.2


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
    settle_max_s: float | None = None,
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
    if settle_max_s is not None:
        options["settleMaxS"] = str(settle_max_s)
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


class _Metadata:
    """Driver-side broker metadata with bounded retries (topic partitions, watermarks)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._consumer: Any = None

    def _client(self) -> Any:
        if self._consumer is None:
            self._consumer = new_consumer(self.options.client)
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
    """Driver side plans offset ranges; `read` runs in executors' Python workers (`kafka_source_reader`)."""

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
        if self._available_now_target is None and self._fits_one_batch(begin, highs, limit):
            highs = self._settled(begin, highs)
        backlog = {tp: max(0, highs[tp] - begin[tp]) for tp in highs}
        take = split_row_cap(backlog, int(limit.max_rows)) if isinstance(limit, ReadMaxRows) else backlog
        end: Offsets = {}
        for (topic, partition), first in begin.items():
            end.setdefault(topic, {})[str(partition)] = first + take.get((topic, partition), 0)
        return end

    @staticmethod
    def _fits_one_batch(begin: dict[tuple[str, int], int], highs: dict[tuple[str, int], int], limit: ReadLimit) -> bool:
        """New records, all of which this batch may take (a capped backlog needs no wait: there is more)."""
        backlog = sum(max(0, highs[tp] - begin[tp]) for tp in highs)
        return backlog > 0 and not (isinstance(limit, ReadMaxRows) and backlog > int(limit.max_rows))

    def _settled(
        self, begin: dict[tuple[str, int], int], highs: dict[tuple[str, int], int]
    ) -> dict[tuple[str, int], int]:
        """The end offsets once they stop moving between two looks, or as of settle_max_s (never
        under available-now, whose end is frozen: no target to apply here)."""
        deadline = time.monotonic() + self.options.settle_max_s
        while time.monotonic() + SETTLE_POLL_S <= deadline:
            time.sleep(SETTLE_POLL_S)
            ends = {tp: marks[1] for tp, marks in self._current().items()}
            now = {tp: max(begin[tp], ends.get(tp, high)) for tp, high in highs.items()}
            if now == highs:
                break
            highs = now
        return highs

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
        ranges: list[KafkaRangePartition] = []
        for topic, parts in end.items():
            for partition, stop in parts.items():
                first = _get(start, topic, int(partition))
                if first is None or int(stop) < first:
                    first = 0  # new partition, or a reset detected in latestOffset: read from its earliest
                if int(stop) > first:
                    ranges.append(KafkaRangePartition(topic, int(partition), first, int(stop)))
        return list(grouped_ranges(ranges, RECORDS_PER_TASK))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRangeGroup)
        yield from read_ranges(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets Spark just committed live in its checkpoint."""

    def stop(self) -> None:
        if self._metadata is not None:
            self._metadata.close()


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
