"""Batched, concurrent Admin API reads with a bounded number of requests in flight.

Why: a cluster with thousands of groups needs thousands of OffsetFetch requests per cycle
(confluent-kafka 2.16 accepts a single group per ``list_consumer_group_offsets`` call), and
doing them one after another would take far longer than a scrape interval. librdkafka runs
requests on its own threads, so the collector only has to keep ``collect.admin_concurrency``
of them in flight and consume results as they arrive. Completions are handed over through a
queue (not ``concurrent.futures.wait``, which costs O(in-flight) per call), so the caller can
turn one group's offsets into samples while the next requests are still on the wire.

Every read stops at the cycle's deadline: what did not answer by then is reported as
unfinished, never waited for.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, OffsetSpec

Unit = TypeVar("Unit")
#: Release the GIL between completed units (see BoundedRequests.__iter__).
YIELD_GIL = True
#: Shortest request timeout handed to librdkafka near the deadline (seconds).
MIN_REQUEST_TIMEOUT_S = 0.1


def seconds_left(deadline: float) -> float:
    return deadline - time.monotonic()


def request_timeout(deadline: float) -> float:
    """librdkafka's per-request timeout: whatever is left of the cycle (never 0, it means default)."""
    return max(MIN_REQUEST_TIMEOUT_S, seconds_left(deadline))


def failed_future(exc: BaseException) -> Future[Any]:
    """A submit that raised locally becomes a failed unit, handled like a broker error."""
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


@dataclass
class BoundedRequests(Generic[Unit]):
    """Run `submit(unit)` for every unit, at most `limit` in flight; iterate completed units.

    `submit` returns the futures of one request (one per group, or one per partition of a
    ListOffsets batch); a unit is complete when all its futures are. Units still running at
    the deadline end up in `unfinished` once iteration stops.
    """

    units: Iterable[Unit]
    submit: Callable[[Unit], list[Future[Any]]]
    limit: int
    deadline: float
    unfinished: list[Unit] = field(default_factory=list)

    def __iter__(self) -> Iterator[tuple[Unit, list[Future[Any]]]]:
        done: queue.SimpleQueue[tuple[Unit, list[Future[Any]]]] = queue.SimpleQueue()
        waiting = iter(self.units)
        running: dict[int, Unit] = {}
        while len(running) < self.limit and self._time_to_start() and (unit := next(waiting, None)) is not None:
            self._start(unit, done, running)
        while running:
            try:
                unit, futures = done.get(timeout=max(0.0, seconds_left(self.deadline)))
            except queue.Empty:
                break
            running.pop(id(unit), None)
            next_unit = next(waiting, None) if self._time_to_start() else None
            if next_unit is not None:
                self._start(next_unit, done, running)
            yield unit, _detached(futures)
            if YIELD_GIL:
                # The caller just spent CPU on this unit's answer while holding the GIL. librdkafka
                # hands every answer over on one background thread that needs the GIL; without
                # this, each handover waits up to sys.getswitchinterval() (5 ms) and all other
                # requests stall behind it.
                time.sleep(0)
        self.unfinished = [*running.values(), *waiting]

    def _time_to_start(self) -> bool:
        """A request is started only with more than librdkafka's shortest timeout left: one sent
        with less would only time out, and librdkafka's admin requests have aborted the process
        (an assertion in its coordinator lookup) when many time out at once."""
        return seconds_left(self.deadline) > MIN_REQUEST_TIMEOUT_S

    def _start(
        self, unit: Unit, done: queue.SimpleQueue[tuple[Unit, list[Future[Any]]]], running: dict[int, Unit]
    ) -> None:
        try:
            futures = self.submit(unit)
        except (KafkaException, ValueError, TypeError) as exc:
            futures = [failed_future(exc)]
        running[id(unit)] = unit
        _when_all_done(futures, lambda: done.put((unit, futures)))


def _detached(futures: list[Future[Any]]) -> list[Future[Any]]:
    """The futures of a completed unit, in a new list; the old one is emptied.

    The futures' done-callbacks hold the old list, which holds the futures: a reference cycle
    that would keep every answer (a group's committed offsets, say) alive until the cycle
    collector runs. Emptied, each answer is freed as soon as the caller is done with it.
    """
    handed = futures.copy()
    futures.clear()
    return handed


def _when_all_done(futures: list[Future[Any]], callback: Callable[[], None]) -> None:
    """Call `callback` once, after the last of `futures` completes (on whichever thread that is)."""
    if len(futures) == 1:
        futures[0].add_done_callback(lambda _f: callback())
        return
    lock = threading.Lock()
    remaining = [len(futures)]

    def one_done(_future: Future[Any]) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            callback()

    for future in futures:
        future.add_done_callback(one_done)


def error_text(exc: BaseException | KafkaError) -> str:
    """KafkaException carries a KafkaError; its str() is the readable part."""
    if isinstance(exc, KafkaException) and exc.args:
        error = exc.args[0]
        return f"{error.name()}: {error.str()}" if isinstance(error, KafkaError) else str(error)
    if isinstance(exc, KafkaError):
        return f"{exc.name()}: {exc.str()}"
    return f"{type(exc).__name__}: {exc}"


Key = TypeVar("Key")
Answer = TypeVar("Answer")


@dataclass
class KeyedReads(Generic[Key, Answer]):
    """Answers per key (partition or group) of batched requests; errors per key; keys left at the deadline."""

    answers: dict[Key, Answer] = field(default_factory=dict)
    errors: dict[Key, str] = field(default_factory=dict)
    unfinished_keys: list[Key] = field(default_factory=list)

    @property
    def unfinished(self) -> int:
        return len(self.unfinished_keys)


def in_batches(keys: list[Key], batch: int) -> list[list[Key]]:
    return [keys[i : i + batch] for i in range(0, len(keys), batch)]


def read_in_batches(
    keys: list[Key], submit: Callable[[list[Key]], list[Future[Any]]], batch: int, limit: int, deadline: float
) -> KeyedReads[Key, Any]:
    """`submit(chunk)` returns one future per key of the chunk, in the chunk's order (as the
    AdminClient's futmaps do); `batch` keys per request, `limit` requests in flight."""
    return read_batches(in_batches(keys, batch), submit, limit, deadline)


def read_batches(
    batches: list[list[Key]], submit: Callable[[list[Key]], list[Future[Any]]], limit: int, deadline: float
) -> KeyedReads[Key, Any]:
    """read_in_batches for batches the caller cut itself (e.g. two kinds of request interleaved)."""
    result: KeyedReads[Key, Any] = KeyedReads()
    requests = BoundedRequests(batches, submit, limit, deadline)
    for chunk, futures in requests:
        if len(futures) != len(chunk):  # the request failed locally, before it was sent
            text = error_text(futures[0].exception() or RuntimeError("no answer"))
            result.errors.update(dict.fromkeys(chunk, text))
            continue
        for key, future in zip(chunk, futures, strict=True):
            exc = future.exception()
            if exc is not None:
                result.errors[key] = error_text(exc)
            else:
                result.answers[key] = future.result()
    result.unfinished_keys = [key for chunk in requests.unfinished for key in chunk]
    return result


Partition = tuple[str, int]
#: ListOffsets specs read each cycle, by name: the log end (high watermark) and the log start.
OFFSET_SPECS: dict[str, Callable[[], OffsetSpec]] = {"latest": OffsetSpec.latest, "earliest": OffsetSpec.earliest}


@dataclass
class LogOffsets:
    """Log-end (`latest`) and log-start (`earliest`) answers: ListOffsetsResultInfo per partition."""

    ends: KeyedReads[Partition, Any]
    starts: KeyedReads[Partition, Any]


def read_log_offsets(
    admin: AdminClient, partitions: list[Partition], batch: int, limit: int, deadline: float
) -> LogOffsets:
    """ListOffsets latest and earliest of every partition, `batch` partitions per request.

    Both kinds of request share one bound of `limit` in flight and one deadline, interleaved
    batch by batch, so the log start costs no extra wait on top of the end offsets.
    """

    def submit(chunk: list[tuple[str, str, int]]) -> list[Future[Any]]:
        request = {TopicPartition(topic, partition): OFFSET_SPECS[spec]() for spec, topic, partition in chunk}
        return list(admin.list_offsets(request, request_timeout=request_timeout(deadline)).values())

    batches = [
        [(spec, topic, partition) for topic, partition in chunk]
        for chunk in in_batches(partitions, batch)
        for spec in OFFSET_SPECS
    ]
    reads = read_batches(batches, submit, limit, deadline)
    return LogOffsets(ends=_of_spec(reads, "latest"), starts=_of_spec(reads, "earliest"))


def _of_spec(reads: KeyedReads[tuple[str, str, int], Any], spec: str) -> KeyedReads[Partition, Any]:
    """One spec's part of a mixed read, keyed by (topic, partition)."""
    return KeyedReads(
        answers={(topic, partition): info for (kind, topic, partition), info in reads.answers.items() if kind == spec},
        errors={(topic, partition): text for (kind, topic, partition), text in reads.errors.items() if kind == spec},
        unfinished_keys=[(topic, partition) for kind, topic, partition in reads.unfinished_keys if kind == spec],
    )


def describe_groups(
    admin: AdminClient, group_ids: list[str], batch: int, limit: int, deadline: float
) -> KeyedReads[str, ConsumerGroupDescription]:
    """DescribeGroups: answers are ConsumerGroupDescription (state, members) per group id."""

    def submit(chunk: list[str]) -> list[Future[Any]]:
        return list(admin.describe_consumer_groups(chunk, request_timeout=request_timeout(deadline)).values())

    return read_in_batches(group_ids, submit, batch, limit, deadline)


@dataclass
class GroupOffsets:
    """One group's committed offsets, or the error that prevented reading them."""

    group_id: str
    partitions: list[TopicPartition]
    error: str | None = None


def read_committed_offsets(
    admin: AdminClient, group_ids: list[str], limit: int, deadline: float
) -> BoundedRequests[str]:
    """OffsetFetch for every group (all its partitions), `limit` groups in flight: the librdkafka
    path, where the protocol client's batches cannot go (collectors/admin/committed_offsets.py).

    Returns the running reads; iterate `committed_groups(reads)` for results and look at
    `reads.unfinished` afterwards for groups that did not answer before the deadline.
    """

    def submit(group_id: str) -> list[Future[Any]]:
        request = [ConsumerGroupTopicPartitions(group_id)]
        return [admin.list_consumer_group_offsets(request, request_timeout=request_timeout(deadline))[group_id]]

    return BoundedRequests(group_ids, submit, limit, deadline)


def committed_groups(reads: BoundedRequests[str]) -> Iterator[GroupOffsets]:
    for group_id, (future,) in reads:
        exc = future.exception()
        if exc is not None:
            yield GroupOffsets(group_id, [], error_text(exc))
        else:
            yield GroupOffsets(group_id, future.result().topic_partitions or [])
