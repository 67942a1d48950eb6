"""The commit-log source: every offset commit of the cluster, read from `__consumer_offsets`.

Polling OffsetFetch once per cycle sees one committed offset per group-partition per cycle: a
rewind that is undone before the next poll is invisible, and "commits arrive with the same
offset" cannot be told from "no commits". The group coordinator writes every commit (with the
broker's commit timestamp) and every group change to `__consumer_offsets`; reading that topic
gives all of them, at the cost of one consumer.

How it reads (one consumer thread per collector process, beside the admin collector):

- It assigns itself every partition of `__consumer_offsets` (no group subscription: there is
  nothing to balance, and a rebalance would only pause it) and commits nothing. Its
  ``group.id`` (``lagwatch-commitlog-<cluster>``) is only what librdkafka requires of a consumer.
- On start it reads from the earliest retained record. The topic is compacted, so that is at
  least the latest commit of every live group-partition: the table of latest commits is
  complete once every partition reached its end once ("loaded"). A restart therefore rebuilds
  the table from the log instead of trusting a saved position.
- While loading, commits newer than ``replay_since_ms`` (the lag window before the start) are
  queued, so a rewind during a collector restart is still seen; older ones only update the
  table, and at the end of the load the table's latest commit per group-partition is queued
  once if it was not already. From then on every commit is queued as it is read. The admin
  collector drains the queue each cycle and publishes each commit as a ``committed_offset``
  sample with source ``commitlog`` and ts = the commit timestamp. The sample id is a hash of
  the labels and that ts, so a commit published twice (after a restart) has the same id and
  is dropped downstream.
- A tombstone for an offset removes it from the table; a tombstone for a group removes its
  metadata only: deleting a group also writes a tombstone for each of its offsets, and a group
  converted between the classic and consumer protocols keeps its offsets.
- Group metadata records give each group's protocol, generation and members (client id,
  host, assigned partitions), kept in :meth:`CommitLogReader.groups`.
- Membership (:mod:`collectors.commit_log.groups`): classic GroupMetadata and Kafka 4's
  consumer-group records are folded into each group's state, members and owners (and a consumer
  group's epoch, member epochs and partitions assigned but not yet reconciled); after each
  batch every group whose membership changed is queued once (:meth:`CommitLogReader.drain_changes`),
  so a member leaving is published seconds after it left, not at the next DescribeGroups.
  Consumer groups name topics by id: :meth:`CommitLogReader.learn_topic_ids` names them.
- Record types that do not help (share and streams groups, subscription metadata…) and value
  versions this reader does not know are skipped and counted per type (:attr:`CommitLogReader.skipped`),
  each type logged once with the reason: an unknown record never stops the reader.

What it cannot read (no `__consumer_offsets`, as on tansu; an ACL that denies it) is reported
by :attr:`CommitLogReader.failure`; the admin collector then falls back to OffsetFetch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from collectors.base import SampleFactory
from collectors.commit_log.decode import (
    GROUP_METADATA,
    OFFSET_COMMIT,
    CommitLogDecodeError,
    GroupMetadata,
    commit_offset_and_time,
    decode_group_metadata,
    decode_key,
)
from collectors.commit_log.groups import GroupBook, GroupChange, Owner
from collectors.commit_log.records import DECODED, SKIPPED, decode_group_key, record_type_name, value_version
from lagwatch.kafka import COMMIT_LOG_TOPIC, commit_log_group
from lagwatch.membership import (
    GROUP_EPOCH_METRIC,
    GROUP_MEMBERS_METRIC,
    GROUP_STATE_CODE,
    GROUP_STATE_METRIC,
    GROUP_TYPE_CODE,
    GROUP_TYPE_METRIC,
    MEMBER_EPOCH_METRIC,
    PARTITION_ASSIGNED_METRIC,
    PARTITION_PENDING_METRIC,
    REBALANCES_METRIC,
)
from lagwatch.samples import Sample
from lagwatch.vocabulary import Source

log = logging.getLogger(__name__)

TOPIC = COMMIT_LOG_TOPIC
SOURCE = Source.COMMITLOG
#: Commits waiting for the next cycle beyond this are dropped (and counted): a collector that
#: is not draining (its admin target moved to another instance) must not grow without bound.
MAX_PENDING = 2_000_000
#: Records handed over by librdkafka per consume() call.
CONSUME_BATCH = 1000
#: Errors that mean this principal cannot read the topic at all: fall back, do not retry.
_FATAL_CODES = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_TOPIC,
}

#: A queued commit: (group_id, topic, partition, offset, commit_ts_ms).
Commit = tuple[str, str, int, int, int]


class CommitLogReader:
    """Consumes `__consumer_offsets` on its own thread; holds the latest commit per group-partition."""

    def __init__(
        self,
        client_config: dict[str, Any],
        cluster: str,
        group_allowed: Callable[[str], bool],
        topic_allowed: Callable[[str], bool],
        replay_since_ms: int = 0,
    ) -> None:
        self._client_config = client_config
        self._replay_since_ms = replay_since_ms
        self.group_id = commit_log_group(cluster)
        self._group_allowed = group_allowed
        self._topic_allowed = topic_allowed
        self._lock = threading.Lock()
        self._advanced = threading.Condition(self._lock)  # notified after every consumed batch
        self._stop = threading.Event()
        self._loaded = threading.Event()
        self._thread: threading.Thread | None = None
        #: group -> (topic, partition) -> (TopicPartition with the offset, commit ts)
        self._latest: dict[str, dict[tuple[str, int], tuple[TopicPartition, int]]] = {}
        self._groups: dict[str, GroupMetadata] = {}
        self._pending: list[Commit] = []
        self._book = GroupBook(self._topic_name)
        self._changes: list[GroupChange] = []
        #: topic id (16 bytes) -> name, and the ids a consumer-group record named that it lacks
        self._topic_ids: dict[bytes, str] = {}
        self._unknown_topic_ids: set[bytes] = set()
        #: records skipped per type (or "type vN" for a value version not known here)
        self.skipped: Counter[str] = Counter()
        self._partitions_at_end: set[int] = set()
        #: next offset to read per partition of the topic (what was consumed so far)
        self._positions: dict[int, int] = {}
        self._partition_count = 0
        self.failure: str | None = None
        self.dropped = 0
        self.decode_errors = 0
        self.records = 0

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self, partitions: int) -> None:
        """Start reading the topic's `partitions` from the beginning (once; later calls do nothing)."""
        if self._thread is not None:
            return
        self._partition_count = partitions
        self._thread = threading.Thread(target=self._run, name="commit-log", daemon=True)
        self._thread.start()

    def wait_loaded(self, timeout_s: float) -> bool:
        """True once every partition was read to its end at least once (the table is complete)."""
        return self._loaded.wait(max(0.0, timeout_s)) and self.failure is None

    @property
    def loading_progress(self) -> str:
        return f"{len(self._partitions_at_end)} of {self._partition_count} partitions read to their end"

    def wait_caught_up(self, ends: dict[int, int], timeout_s: float) -> bool:
        """Wait until every partition was read up to `ends` (partition -> end offset): then every
        commit acknowledged before those ends were taken is in the table."""
        deadline = time.monotonic() + timeout_s
        positions = self._positions
        with self._advanced:
            while not all(positions.get(p, 0) >= end for p, end in ends.items()):
                left = deadline - time.monotonic()
                if left <= 0 or self.failure is not None:
                    return False
                self._advanced.wait(left)
        return True

    def cpu_seconds(self) -> float:
        """CPU time the reader thread has used so far (for the bench; 0 when it is not running)."""
        thread = self._thread
        if thread is None or thread.ident is None or not thread.is_alive():
            return 0.0
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- what the admin collector reads each cycle ---------------------------------------------

    def drain(self) -> list[Commit]:
        """The commits read since the last drain, oldest first per partition of the topic."""
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def committed(self) -> dict[str, list[TopicPartition]]:
        """Latest committed offset per group-partition (TopicPartitions shared: do not modify)."""
        with self._lock:
            return {group: [tp for tp, _ in offsets.values()] for group, offsets in self._latest.items()}

    def group_ids(self) -> set[str]:
        """Every group with a latest commit in the table (an entry is dropped with its last commit)."""
        with self._lock:
            return set(self._latest)

    @property
    def held_groups(self) -> int:
        """Groups the table holds an entry for (its size: it must not outlive deleted groups)."""
        return len(self._latest)

    def groups(self) -> dict[str, GroupMetadata]:
        """Latest group metadata (protocol, generation, members) per group id."""
        with self._lock:
            return dict(self._groups)

    def drain_changes(self) -> list[GroupChange]:
        """The membership changes read since the last drain, in the order they were read."""
        with self._lock:
            changes, self._changes = self._changes, []
        return changes

    def unknown_topic_ids(self) -> set[bytes]:
        with self._lock:
            return set(self._unknown_topic_ids)

    def learn_topic_ids(self, names: dict[bytes, str]) -> None:
        """Name topic ids (from DescribeTopics): owners of consumer groups are named from then on."""
        with self._lock:
            new = names.keys() & self._unknown_topic_ids
            self._topic_ids.update(names)
            self._unknown_topic_ids.difference_update(names)
            if new:
                self._book.retouch_consumer_groups()
                self._changes.extend(self._book.changes())

    def _topic_name(self, topic_id: bytes) -> str | None:
        name = self._topic_ids.get(topic_id)
        if name is None:
            self._unknown_topic_ids.add(topic_id)
        elif not self._topic_allowed(name):
            return None
        return name

    # -- the consumer thread ------------------------------------------------------------------

    def _consumer(self) -> Consumer:
        settings = {
            **self._client_config,
            "group.id": self.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            # Offsets committed inside a transaction count once the transaction commits.
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 100,
            "logger": logging.getLogger(f"{__name__}.librdkafka"),
        }
        return Consumer(settings)

    def _run(self) -> None:
        try:
            consumer = self._consumer()
        except KafkaException as exc:
            self._fail(f"consumer from [cluster] settings: {exc}")
            return
        try:
            consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(self._partition_count)])
            log.info("commit log: reading %s (%d partitions) from the beginning", TOPIC, self._partition_count)
            started = time.monotonic()
            while not self._stop.is_set() and self.failure is None:
                messages = consumer.consume(CONSUME_BATCH, timeout=0.2)
                if messages:
                    self.apply(messages)
                if not self._loaded.is_set() and len(self._partitions_at_end) >= self._partition_count:
                    self._finish_load(time.monotonic() - started)
        except Exception as exc:  # never let the thread die silently: the admin collector falls back
            log.exception("commit log reader stopped")
            self._fail(f"{type(exc).__name__}: {exc}")
        finally:
            consumer.close()

    def _fail(self, reason: str) -> None:
        self.failure = reason
        self._loaded.set()  # wake anyone waiting: the answer is "not usable"

    def _finish_load(self, seconds: float) -> None:
        with self._lock:
            for group, offsets in self._latest.items():
                self._pending.extend(
                    (group, tp.topic, tp.partition, tp.offset, commit_ts)
                    for tp, commit_ts in offsets.values()
                    if commit_ts < self._replay_since_ms  # the newer ones were queued as they were read
                )
            partitions = sum(len(offsets) for offsets in self._latest.values())
        log.info(
            "commit log: loaded %d records in %.1f s: %d groups, %d group-partitions with a commit",
            self.records,
            seconds,
            len(self._latest),
            partitions,
        )
        self._loaded.set()

    def apply(self, messages: list[Message]) -> None:
        """Fold consumed records into the table and the queue (the per-commit hot path)."""
        queue_since = -1 if self._loaded.is_set() else self._replay_since_ms
        latest, pending, positions = self._latest, self._pending, self._positions
        group_allowed, topic_allowed = self._group_allowed, self._topic_allowed
        with self._advanced:
            self._advanced.notify_all()  # on leaving the block, with this batch applied
            for message in messages:
                error = message.error()
                if error is not None:
                    self._on_error(message, error)
                    continue
                self.records += 1
                positions[message.partition()] = message.offset() + 1
                key, value = message.key(), message.value()
                if key is None:
                    continue
                try:
                    kind, group, topic, partition = decode_key(key)
                    if kind == OFFSET_COMMIT:
                        if not group_allowed(group) or not topic_allowed(topic):
                            continue
                        offsets = latest.get(group)
                        if value is None:
                            if offsets is not None:
                                offsets.pop((topic, partition), None)
                                if not offsets:  # a deleted (or short-lived) group leaves no key behind
                                    del latest[group]
                            continue
                        offset, commit_ts = commit_offset_and_time(value)
                        if offsets is None:
                            offsets = latest[group] = {}
                        offsets[(topic, partition)] = (TopicPartition(topic, partition, offset), commit_ts)
                        if commit_ts >= queue_since:
                            if len(pending) < MAX_PENDING:
                                pending.append((group, topic, partition, offset, commit_ts))
                            else:
                                self.dropped += 1
                    elif kind == GROUP_METADATA:
                        self._on_group(group, value, message.timestamp()[1])
                    else:
                        self._on_group_record(key, value, message.timestamp()[1])
                except CommitLogDecodeError as exc:
                    self.decode_errors += 1
                    if self.decode_errors <= 10:
                        log.warning("commit log %s[%d]@%d: %s", TOPIC, message.partition(), message.offset(), exc)
            changes = self._book.changes(queue_since)
            room = MAX_PENDING - len(self._changes)
            self._changes.extend(changes[:room])
            self.dropped += max(0, len(changes) - room)

    def _on_group(self, group: str, value: bytes | None, ts: int) -> None:
        if value is None:  # deleted, or converted to the consumer protocol (its records follow)
            self._groups.pop(group, None)
            self._book.classic(group, None, ts)
            return
        if self._group_allowed(group):
            self._groups[group] = metadata = decode_group_metadata(value)
            self._book.classic(group, metadata, ts)

    def _on_group_record(self, key: bytes, value: bytes | None, ts: int) -> None:
        """A record of type 3 and up (Kafka 4's group records): decoded, or skipped and counted."""
        record_type, group, member = decode_group_key(key)
        known_version = DECODED.get(record_type)
        if known_version is None:
            self._skip(
                record_type_name(record_type), SKIPPED.get(record_type, "a record type this reader does not know")
            )
        elif value is not None and (version := value_version(value)) != known_version:
            self._skip(f"{record_type_name(record_type)} v{version}", "a value version this reader does not know")
        elif self._group_allowed(group):
            self._book.consumer(record_type, group, member, value, ts)

    def _skip(self, kind: str, reason: str) -> None:
        self.skipped[kind] += 1
        if self.skipped[kind] == 1:
            log.info("commit log: skipping %s records (%s); counted in commit_log_records_skipped_total", kind, reason)

    def _grant_hint(self, code: int) -> str:
        grant = missing_grant(code, self.group_id)
        return f"; grant {grant} to this principal to read every commit" if grant else ""

    def _on_error(self, message: Message, error: KafkaError) -> None:
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            self._partitions_at_end.add(message.partition())
            self._positions[message.partition()] = message.offset()
        elif code in _FATAL_CODES:
            self.failure = f"cannot read {TOPIC}: {error.name()}: {error.str()}{self._grant_hint(code)}"
            self._loaded.set()
        else:
            log.warning("commit log %s[%s]: %s", TOPIC, message.partition(), error.str())


def missing_grant(code: int, group_id: str) -> str | None:
    """The ACL that would let the reader in, whoever the principal is (docs/operations.md, "Secured clusters")."""
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return f"Read on topic {TOPIC}"
    if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return f"Describe on group {group_id} (the reader's group.id; it joins no group)"
    return None


def commit_samples(commits: list[Commit], make: SampleFactory) -> list[Sample]:
    """One `committed_offset` sample per commit, stamped with the broker's commit time."""
    return [
        make(
            ts=commit_ts,
            source=SOURCE,
            metric="committed_offset",
            kind="counter",
            value=offset,
            topic=topic,
            partition=partition,
            group_id=group,
        )
        for group, topic, partition, offset, commit_ts in commits
    ]


def in_use_sample(ts: int, make: SampleFactory, in_use: bool) -> Sample:
    """`commit_log_in_use`: 1 when this cycle's committed offsets came from the commit log, 0 from OffsetFetch."""
    return make(ts=ts, source=SOURCE, metric="commit_log_in_use", kind="gauge", value=1.0 if in_use else 0.0)


SKIPPED_METRIC = "commit_log_records_skipped_total"


def state_code(state: str) -> int:
    """The state's code in lagwatch.membership (Unknown for a name it does not know)."""
    return GROUP_STATE_CODE.get(state, GROUP_STATE_CODE["Unknown"])


def membership_samples(changes: list[GroupChange], make: SampleFactory) -> list[Sample]:
    """Per change, the admin collector's membership metrics (lagwatch.membership) with source
    `commitlog` and ts = the record's time: a consumer group's epoch, the group's rebalance count
    (generation or epoch: its increase counts every rebalance, however many happened between two
    cycles), state code, group type, member count, each owned partition, then a consumer group's
    member epochs and pending partitions."""
    samples: list[Sample] = []
    for change in changes:
        ts, group = change.ts, change.group_id
        if change.epoch is not None:
            samples.append(make(ts=ts, source=SOURCE, metric=GROUP_EPOCH_METRIC, kind="gauge",
                                value=change.epoch, group_id=group))  # fmt: skip
        if change.rebalances is not None:
            samples.append(make(ts=ts, source=SOURCE, metric=REBALANCES_METRIC, kind="counter",
                                value=change.rebalances, group_id=group))  # fmt: skip
        samples.append(make(ts=ts, source=SOURCE, metric=GROUP_STATE_METRIC, kind="gauge",
                            value=state_code(change.state), group_id=group))  # fmt: skip
        samples.append(make(ts=ts, source=SOURCE, metric=GROUP_TYPE_METRIC, kind="gauge",
                            value=GROUP_TYPE_CODE[change.protocol], group_id=group))  # fmt: skip
        samples.append(make(ts=ts, source=SOURCE, metric=GROUP_MEMBERS_METRIC, kind="gauge",
                            value=change.members, group_id=group))  # fmt: skip
        samples.extend(_partition_members(PARTITION_ASSIGNED_METRIC, change.owners, change, make))
        samples.extend(
            make.member(ts=ts, source=SOURCE, metric=MEMBER_EPOCH_METRIC, kind="gauge", value=epoch,
                        group_id=group, client_id=client_id, member_id=member_id, host=host)
            for member_id, client_id, host, epoch in change.member_epochs
        )  # fmt: skip
        samples.extend(_partition_members(PARTITION_PENDING_METRIC, change.pending, change, make))
    return samples


def _partition_members(
    metric: str, owners: tuple[Owner, ...], change: GroupChange, make: SampleFactory
) -> list[Sample]:
    """A flag sample per partition naming its member: its owner, or the member it is pending for."""
    return [
        make.member(ts=change.ts, source=SOURCE, metric=metric, kind="gauge", value=1, group_id=change.group_id,
                    topic=topic, partition=partition, client_id=client_id, member_id=member_id, host=host)
        for topic, partition, member_id, client_id, host in owners
    ]  # fmt: skip


def skipped_samples(ts: int, make: SampleFactory, skipped: Counter[str]) -> list[Sample]:
    """`commit_log_records_skipped_total`: all types (no label), and per skipped record type
    (label client_id = the type)."""
    total = make(ts=ts, source=SOURCE, metric=SKIPPED_METRIC, kind="counter", value=sum(skipped.values()))
    return [total] + [
        make(ts=ts, source=SOURCE, metric=SKIPPED_METRIC, kind="counter", value=count, client_id=kind)
        for kind, count in sorted(skipped.items())
    ]
