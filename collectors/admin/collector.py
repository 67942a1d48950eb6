"""The admin collector: one cycle reads the cluster through the Kafka Admin API.

Per cycle, within `collect.timeout_s`: cluster metadata; log-end and log-start offsets of
every allowed partition (batched ListOffsets latest and earliest); the retention settings of
topics new to the collector or due for a refresh (:mod:`collectors.admin.topic_configs`); the size
of each partition of a size-limited topic (:mod:`collectors.log_dirs.reader`); the group list; committed
offsets of every allowed group; consumer lag from the end and
committed offsets of this very cycle; and, if `collect.describe_groups`, each group's state,
member count and the member that owns each partition (many groups per request where the brokers
speak it: :mod:`collectors.admin.group_descriptions`). The rules that turn readings into
samples are in :mod:`collectors.admin.samples`; the concurrent request machinery in
:mod:`collectors.admin.requests`.

Committed offsets come from the commit log (:mod:`collectors.commit_log.reader`, every commit read
from `__consumer_offsets`) when `collect.commit_log` allows it and the cluster lets us read the
topic: then the cycle sends no OffsetFetch at all and also publishes each commit read since the
last cycle. Otherwise (no such topic, as on tansu; an ACL; the log still loading) they come
from OffsetFetch (many groups per request where the brokers speak it:
:mod:`collectors.admin.committed_offsets`), and the log says why once.

Failure model: a cluster that does not return metadata within the timeout is a failed scrape
(`ok=False`, up = 0). Anything after that (a group whose offsets fail, a partition whose end
offset errors, requests still running at the deadline) is a per-metric error: the rest of the
cycle still counts. One AdminClient is kept across cycles (connections and coordinator
lookups are cached by librdkafka).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, ListConsumerGroupsResult, OffsetSpec

from collectors.admin.committed_offsets import CommittedOffsetReader
from collectors.admin.group_descriptions import GroupDescriber
from collectors.admin.group_visibility import HiddenGroups, literal_names, refused
from collectors.admin.requests import (
    KeyedReads,
    error_text,
    read_log_offsets,
    request_timeout,
)
from collectors.admin.samples import (
    SOURCE,
    GroupStateSamples,
    LagCounts,
    NameFilter,
    cluster_samples,
    described_state_code,
    group_offset_samples,
    group_partition_samples,
    group_type_code,
    known_state_code,
    partition_offset_samples,
    partition_owner_samples,
    partition_pending_samples,
)
from collectors.admin.topic_configs import NOT_REPORTED, TopicConfigReader, retention_samples
from collectors.base import SampleFactory, ScrapeResult
from collectors.commit_log.reader import (
    CommitLogReader,
    commit_samples,
    in_use_sample,
    membership_samples,
    skipped_samples,
)
from collectors.commit_log.topics import TopicIdNamer
from collectors.kafka_protocol.connection import ClientSecurity
from collectors.log_dirs.reader import LogDirReader
from collectors.share_groups.reader import ShareGroupReader
from collectors.share_groups.samples import share_group_samples
from collectors.streams_groups.reader import StreamsGroupReader
from collectors.streams_groups.samples import streams_group_samples
from lagwatch.config import ClusterConfig, Config
from lagwatch.gc_pause import cyclic_gc_paused
from lagwatch.kafka import COMMIT_LOG_TOPIC, cluster_client_config
from lagwatch.samples import Sample
from lagwatch.vocabulary import GROUP_SIZE_METRIC

log = logging.getLogger(__name__)

#: Per-metric errors kept word for word in one ScrapeResult; the rest are counted.
MAX_ERROR_LINES = 20


class ErrorList:
    """Errors of one cycle: the first few in full, then a count (5,000 failed groups ≠ 5,000 lines)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.more = 0

    def add(self, line: str) -> None:
        if len(self.lines) < MAX_ERROR_LINES:
            self.lines.append(line)
        else:
            self.more += 1

    def result(self) -> list[str]:
        return [*self.lines, f"… and {self.more} more errors"] if self.more else list(self.lines)


class AdminCollector:
    """Collector protocol for one cluster's Admin API (target name ``admin@<cluster>``)."""

    def __init__(self, config: Config, cluster: ClusterConfig | None = None) -> None:
        """`cluster`: which monitored cluster (its servers, client settings and group lists); the
        home cluster (`config.cluster`) when not given, as in the one-cluster form."""
        self._config = config
        self.cluster = cluster or config.cluster
        self._settings = cluster_client_config(config, self.cluster)
        self._topic_allowed = NameFilter(config.collect.topics_allow, config.collect.topics_deny)
        # The cluster's own lists, else [collect]'s: the config loader fills them in for every cluster.
        allow = self.cluster.groups_allow
        self._group_allowed = NameFilter(allow, self.cluster.groups_deny)
        self._admin: AdminClient | None = None
        self._busy = threading.Lock()
        self._commit_log = (
            CommitLogReader(
                self._settings,
                self.cluster.name,
                self._group_allowed,
                self._topic_allowed,
                replay_since_ms=int((time.time() - config.lag.window_s) * 1000),
            )
            if config.collect.commit_log != "off"
            else None
        )
        self._fallback_said: str | None = None
        self._share_groups = ShareGroupReader(self.name, self._settings, self._group_allowed, cluster=self.cluster.name)
        self._log_dirs = LogDirReader(self.name, self._settings, cluster=self.cluster.name)
        security = ClientSecurity.or_reason(self.cluster.name, self._settings)  # one login setup (token) for both
        self._committed = CommittedOffsetReader(self.name, security)
        self._describer = GroupDescriber(self.name, security)
        # Streams groups (KIP-1071): ListGroups leaves them out, so their ids come from this reader.
        self._streams_groups = StreamsGroupReader(
            self.name, self._settings, self._group_allowed, cluster=self.cluster.name
        )
        self._topic_ids = TopicIdNamer()
        self._hidden = HiddenGroups(self.name)
        #: Groups named exactly in groups_allow: known to exist even where ListGroups leaves them out.
        self._named_groups = {g for g in literal_names(allow) if self._group_allowed(g)}
        self._topic_configs = TopicConfigReader(config.collect.topic_config_refresh_s)
        self._said_retention_refused = False
        self._said_retention_unreported = False

    @property
    def name(self) -> str:
        return f"admin@{self.cluster.name}"

    @property
    def cluster_name(self) -> str:
        return self.cluster.name

    @property
    def source(self) -> str:
        return SOURCE

    @property
    def labels(self) -> dict[str, str | None]:
        return {}

    def events(self, make: SampleFactory) -> list[Sample]:
        """Membership changes the commit log read since the last cycle or call: published between
        cycles by the runner, so a member leaving reaches the lake seconds after it left."""
        reader = self._commit_log
        if reader is None or not reader.wait_loaded(0):
            return []
        return membership_samples(reader.drain_changes(), make)

    def close(self) -> None:
        if self._commit_log is not None:
            self._commit_log.close()
        self._share_groups.close()
        self._streams_groups.close()
        self._log_dirs.close()
        self._admin = None  # librdkafka closes the client's connections when it is collected

    def _client(self) -> AdminClient:
        if self._admin is None:
            settings = {**self._settings, "logger": logging.getLogger(f"{__name__}.librdkafka")}
            self._admin = AdminClient(settings)
        return self._admin

    def collect(self, ts_ms: int, make: SampleFactory) -> ScrapeResult:
        if not self._busy.acquire(blocking=False):
            return ScrapeResult(self.name, ok=False, errors=["the previous admin cycle is still running"])
        try:
            with cyclic_gc_paused():  # a big cluster's cycle builds ~10 tracked objects per partition offset
                return self._cycle(ts_ms, make, time.monotonic() + self._config.collect.timeout_s)
        finally:
            self._busy.release()
            if self._admin is not None:
                self._admin.poll(0)  # hands librdkafka's queued log lines to the logger

    def _cycle(self, ts: int, make: SampleFactory, deadline: float) -> ScrapeResult:
        started = time.monotonic()
        try:
            admin = self._client()
        except KafkaException as exc:  # an invalid librdkafka property in the cluster's client settings
            return ScrapeResult(
                self.name, ok=False, errors=[f"admin client from cluster {self.cluster.name!r} client settings: "
                                             f"{error_text(exc)}"]
            )  # fmt: skip
        try:
            metadata = admin.list_topics(timeout=request_timeout(deadline))
        except KafkaException as exc:
            servers = self.cluster.bootstrap_servers
            return ScrapeResult(self.name, ok=False, errors=[f"no cluster metadata from {servers}: {error_text(exc)}"])
        cycle = _Cycle(admin, ts, make, deadline)
        listed = admin.list_consumer_groups(request_timeout=request_timeout(deadline))  # runs while we read ends
        shares_read = self._share_groups.begin(metadata, deadline)
        streams_read = self._streams_groups.begin(metadata, deadline)
        samples = cluster_samples(metadata, self._topic_allowed, ts, make)
        partitions = [
            (topic, partition)
            for topic, topic_meta in metadata.topics.items()
            if self._topic_allowed(topic)
            for partition in topic_meta.partitions
        ]
        ends, starts = self._log_offsets(cycle, partitions)
        samples.extend(partition_offset_samples("log_end_offset", "counter", ends, ts, make))
        samples.extend(partition_offset_samples("log_start_offset", "gauge", starts, ts, make))
        allowed_topics = [t for t in metadata.topics if self._topic_allowed(t)]
        samples.extend(self._topic_retention(cycle, allowed_topics))
        sizes_read = self._log_dirs.begin(metadata, self._topic_configs.size_limited(allowed_topics), deadline)
        reader = self._usable_commit_log(metadata, cycle)
        listings = self._group_listings(cycle, listed)
        if reader is not None:
            existing = metadata.topics.keys()
            samples.extend(commit_samples([c for c in reader.drain() if c[1] in existing], make))
            self._topic_ids.name_unknown(admin, reader, list(existing), request_timeout(deadline))
            samples.extend(membership_samples(reader.drain_changes(), make))
            samples.extend(skipped_samples(ts, make, reader.skipped))
            offsets = self._commit_log_offsets(cycle, reader, ends, starts, existing)
        else:
            streams_ids = self._streams_groups.group_ids((cycle.deadline - time.monotonic()) / 2)  # not listed
            offsets = self._group_offsets(cycle, metadata, sorted(listings.keys() | streams_ids), ends, starts)
        samples.extend(offsets)
        sizes = sizes_read()
        samples.extend(group_partition_samples(GROUP_SIZE_METRIC, offsets, sizes.sizes, ts, make))
        for line in sizes.errors:
            cycle.errors.add(line)
        if self._commit_log is not None:
            samples.append(in_use_sample(ts, make, reader is not None))
        samples.extend(self._group_states(cycle, metadata, listings))
        streams = streams_read()
        self._find_unlisted_hidden(cycle, metadata, listings.keys() | streams.descriptions.keys(), reader)
        samples.append(self._hidden.report(cycle.hidden, ts, make))
        share_samples, share_errors = share_group_samples(shares_read(), self._topic_allowed, ts, make)
        samples.extend(share_samples)
        for line in share_errors:
            cycle.errors.add(line)
        streams_samples, streams_errors = streams_group_samples(streams, self._topic_allowed, ts, make)
        samples.extend(streams_samples)
        for line in streams_errors:
            cycle.errors.add(line)
        cycle.log_summary(self.name, len(partitions), len(listings), time.monotonic() - started)
        return ScrapeResult(self.name, ok=True, samples=samples, errors=cycle.errors.result())

    def _log_offsets(self, cycle: _Cycle, partitions: list[tuple[str, int]]) -> tuple[Offsets, Offsets]:
        """End and start offsets per partition (each without the partitions that failed)."""
        collect = self._config.collect
        read = read_log_offsets(
            cycle.admin, partitions, collect.list_offsets_batch, collect.admin_concurrency, cycle.deadline
        )
        return _offsets(cycle, "log_end_offset", read.ends), _offsets(cycle, "log_start_offset", read.starts)

    def _topic_retention(self, cycle: _Cycle, topics: list[str]) -> list[Sample]:
        """Retention settings of the topics due for a read (new ones, or not read for the refresh time)."""
        due = self._topic_configs.due(topics, time.monotonic())
        if not due:
            return []
        read = self._topic_configs.read(cycle.admin, due, self._config.collect.admin_concurrency, cycle.deadline)
        refused = sorted(topic for topic, error in read.errors.items() if "AUTHORIZATION_FAILED" in error)
        if refused and not self._said_retention_refused:
            self._said_retention_refused = True
            log.warning(
                "%s: no retention settings for %d topic(s) (%s): grant DescribeConfigs on them to this principal "
                "for the retention margin; until then their groups have none",
                self.name, len(refused), ", ".join(refused[:10]) + (", …" if len(refused) > 10 else ""),
            )  # fmt: skip
        unreported = sorted(topic for topic, error in read.errors.items() if NOT_REPORTED in error)
        if unreported and not self._said_retention_unreported:
            self._said_retention_unreported = True
            log.info(
                "%s: the broker reports no retention settings for %d topic(s) (%s; %s): their groups have no "
                "retention margin", self.name, len(unreported), ", ".join(unreported[:10]), read.errors[unreported[0]],
            )  # fmt: skip
        for topic, error in read.errors.items():
            if topic not in refused and topic not in unreported:
                cycle.errors.add(f"topic retention {topic}: {error}")
        if read.unfinished:
            cycle.errors.add(f"topic retention: {read.unfinished} topic(s) not described within the timeout")
        return retention_samples(read.answers, cycle.ts, cycle.make)

    def _group_listings(self, cycle: _Cycle, listed: Future[Any]) -> dict[str, Listing]:
        """Allowed group ids with the state and type codes ListGroups reported (None where it did not)."""
        try:
            result: ListConsumerGroupsResult = listed.result(timeout=max(0.0, cycle.deadline - time.monotonic()))
        except Exception as exc:  # KafkaException, or TimeoutError at the deadline
            cycle.errors.add(f"list_consumer_groups: {error_text(exc)}")
            return {}
        for error in result.errors or []:
            cycle.errors.add(f"list_consumer_groups: {error_text(error)}")
        return {
            listing.group_id: (known_state_code(listing.state), group_type_code(getattr(listing, "type", None)))
            for listing in result.valid or []
            if self._group_allowed(listing.group_id)
        }

    def _group_offsets(
        self, cycle: _Cycle, metadata: Any, group_ids: list[str], ends: Offsets, starts: Offsets
    ) -> list[Sample]:
        """Committed offsets, lag and log starts, turned into samples as each group's answer arrives."""
        concurrency = self._config.collect.admin_concurrency
        reads = self._committed.read(cycle.admin, metadata, group_ids, concurrency, cycle.deadline)
        samples: list[Sample] = []
        for group in reads:
            if group.error is not None:
                cycle.refused_or_error(group.group_id, group.error, "committed_offset")
                continue
            samples.extend(
                group_offset_samples(
                    group.group_id,
                    group.partitions,
                    ends,
                    self._topic_allowed,
                    cycle.ts,
                    cycle.make,
                    cycle.counts,
                    starts,
                )
            )
        for line in cycle.counts.partition_errors:
            cycle.errors.add(f"committed_offset {line}")
        if reads.unfinished:
            cycle.errors.add(f"committed_offset: {len(reads.unfinished)} group(s) not answered within the timeout")
        return samples

    def _usable_commit_log(self, metadata: Any, cycle: _Cycle) -> CommitLogReader | None:
        """The commit-log reader when it can give this cycle's committed offsets, else None (and why, once)."""
        reader = self._commit_log
        if reader is None:
            return None
        topic = metadata.topics.get(COMMIT_LOG_TOPIC)
        if reader.failure is not None:
            why = reader.failure
        elif topic is None:
            why = (
                f"the cluster has no {COMMIT_LOG_TOPIC} topic visible to this principal (none on tansu; "
                f"on Kafka, grant Describe and Read on topic {COMMIT_LOG_TOPIC} to read the commit log)"
            )
        else:
            reader.start(len(topic.partitions))
            # The first load may take a while: wait for it within half the cycle, then fall back.
            if reader.wait_loaded((cycle.deadline - time.monotonic()) / 2):
                if self._fallback_said is not None:
                    log.info("%s: committed offsets from the commit log again", self.name)
                self._fallback_said = None
                self._catch_up(reader, cycle, list(topic.partitions))
                return reader
            why = reader.failure or f"commit log still loading ({reader.loading_progress})"
        if self._config.collect.commit_log == "on":
            cycle.errors.add(f"commit_log = on, but {why}; committed offsets from OffsetFetch")
        if why != self._fallback_said:
            # Expected on a cluster without the topic (tansu) unless the config asked for it.
            level = logging.INFO if topic is None and self._config.collect.commit_log == "auto" else logging.WARNING
            log.log(level, "%s: committed offsets from OffsetFetch (source admin): %s", self.name, why)
            self._fallback_said = why
        return None

    def _catch_up(self, reader: CommitLogReader, cycle: _Cycle, partitions: list[int]) -> None:
        """Let the reader reach the commit log's end as of now, so every commit acknowledged
        before this cycle is in its table (bounded: half of what is left of the cycle)."""
        request = {TopicPartition(COMMIT_LOG_TOPIC, p): OffsetSpec.latest() for p in partitions}
        try:
            futures = cycle.admin.list_offsets(
                request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=request_timeout(cycle.deadline)
            )
            ends = {tp.partition: future.result().offset for tp, future in futures.items()}
        except Exception as exc:  # KafkaException per partition, or a local error
            log.debug("%s: end offsets of %s: %s", self.name, COMMIT_LOG_TOPIC, error_text(exc))
            return
        if not reader.wait_caught_up(ends, (cycle.deadline - time.monotonic()) / 2):
            log.info("%s: the commit log reader is behind the log end; this cycle uses what it read", self.name)

    def _commit_log_offsets(
        self, cycle: _Cycle, reader: CommitLogReader, ends: Offsets, starts: Offsets, existing: Collection[str]
    ) -> list[Sample]:
        """committed_offset, consumer_lag and group_log_start_offset per group-partition from the latest
        commits, no OffsetFetch.

        Commits to a topic deleted since are left out, as OffsetFetch leaves them out: the log
        keeps them until the group's offsets expire, but no consumer can act on them.
        """
        samples: list[Sample] = []
        for group_id, committed in reader.committed().items():
            partitions = [tp for tp in committed if tp.topic in existing]
            samples.extend(
                group_offset_samples(
                    group_id, partitions, ends, self._topic_allowed, cycle.ts, cycle.make, cycle.counts, starts
                )
            )
        return samples

    def _group_states(self, cycle: _Cycle, metadata: Any, listings: dict[str, Listing]) -> list[Sample]:
        """State and type from DescribeGroups when enabled (with the members and their partitions), else
        from ListGroups."""
        collect = self._config.collect
        described: KeyedReads[str, ConsumerGroupDescription] = KeyedReads()
        if collect.describe_groups and listings:
            described = self._describer.read(
                cycle.admin,
                metadata,
                sorted(listings),
                collect.describe_groups_batch,
                collect.admin_concurrency,
                cycle.deadline,
            )
            for group_id, error in described.errors.items():
                cycle.refused_or_error(group_id, error, "consumer_group_state")
            if described.unfinished:
                cycle.errors.add(
                    f"consumer_group_state: {described.unfinished} group(s) not described within the timeout"
                )
        samples: list[Sample] = []
        state_samples = GroupStateSamples(cycle.ts, cycle.make)
        for group_id, (listed_state, listed_type) in listings.items():
            description = described.answers.get(group_id)
            state = described_state_code(description) if description is not None else None
            members = len(description.members or []) if description is not None else None
            group_type = group_type_code(description.type) if description is not None else None
            samples.extend(
                state_samples(
                    group_id,
                    listed_state if state is None else state,
                    members,
                    listed_type if group_type is None else group_type,
                )
            )
            if description is not None:
                for describe in (partition_owner_samples, partition_pending_samples):
                    samples.extend(describe(group_id, description, self._topic_allowed, cycle.ts, cycle.make))
        return samples

    def _find_unlisted_hidden(
        self, cycle: _Cycle, metadata: Any, listed: Collection[str], reader: CommitLogReader | None
    ) -> None:
        """Groups known from the commit log or named in groups_allow but not listed: ListGroups leaves
        out the groups the principal may not describe (without Describe on the cluster). Describing them
        tells hidden from absent (collectors/admin/group_visibility.py)."""
        known = self._named_groups | (reader.group_ids() if reader is not None else set())
        unlisted = sorted(known - set(listed) - cycle.hidden)
        if not unlisted:
            return
        collect = self._config.collect
        described = self._describer.read(
            cycle.admin,
            metadata,
            unlisted,
            collect.describe_groups_batch,
            collect.admin_concurrency,
            cycle.deadline,
            listed=False,
        )
        cycle.hidden.update(group_id for group_id, error in described.errors.items() if refused(error))


Offsets = dict[tuple[str, int], int]
#: What ListGroups said of a group: its state code and type code (None where it did not say).
Listing = tuple[int | None, int | None]


def _offsets(cycle: _Cycle, metric: str, reads: KeyedReads[tuple[str, int], Any]) -> Offsets:
    for (topic, partition), error in reads.errors.items():
        cycle.errors.add(f"{metric} {topic}[{partition}]: {error}")
    if reads.unfinished:
        cycle.errors.add(f"{metric}: {reads.unfinished} partition(s) not answered within the timeout")
    return {key: info.offset for key, info in reads.answers.items()}


@dataclass
class _Cycle:
    """What one collect() call shares between its steps."""

    admin: AdminClient
    ts: int
    make: SampleFactory
    deadline: float
    errors: ErrorList = field(default_factory=ErrorList)
    counts: LagCounts = field(default_factory=LagCounts)
    #: Groups the principal may not describe (GROUP_AUTHORIZATION_FAILED), reported on their own.
    hidden: set[str] = field(default_factory=set)

    def refused_or_error(self, group_id: str, error: str, metric: str) -> None:
        """A group read that failed: hidden from this principal, or an error of the cycle."""
        if refused(error):
            self.hidden.add(group_id)
        else:
            self.errors.add(f"{metric} group {group_id}: {error}")

    def log_summary(self, name: str, partitions: int, groups: int, duration_s: float) -> None:
        counts = self.counts
        log.debug(
            "%s: %d partitions, %d groups in %.2f s (partitions without commit %d, without end offset %d)",
            name, partitions, groups, duration_s, counts.no_commit, counts.no_end_offset,
        )  # fmt: skip
        if counts.negative:
            log.warning(
                "%s: %d partition(s) with committed offset beyond the log end (consumer_lag_negative = 1, no lag)",
                name, counts.negative,
            )  # fmt: skip
