"""What the admin collector's readings mean as samples (pure functions, no I/O).

Kept apart from the requests so the rules an operator relies on can be read and tested on
their own:

- Cluster-wide counts (`broker_count`, `controller_id`, per-broker `partition_count` /
  `leader_count`, cluster `under_replicated_partitions` / `offline_partitions`) cover every
  partition, internal topics included, like the brokers' own JMX gauges. Per-topic gauges
  (`topic_partitions`, per-topic `under_replicated_partitions`) follow the topic filter.
- `consumer_lag` = log-end offset − committed offset, both read in the same cycle.
  A partition without a committed offset (OFFSET_INVALID, -1001) has no lag: nothing was
  consumed yet, and inventing one (from the log start?) would be a guess. A negative value
  (committed beyond the end the broker just reported: a reset log, or a commit racing our
  ListOffsets) is a data-quality event: no `consumer_lag`, a `consumer_lag_negative` = 1 gauge
  for that partition instead.
- `log_start_offset` (ListOffsets earliest) is a gauge per allowed partition: retention and
  deleteRecords move it, a recreated topic moves it back. With the committed offset it says how
  close retention is to deleting records a group has not read yet.
- `group_log_start_offset`: the log start of each partition a group has a committed offset on,
  in that cycle, labelled with the group, so the lag judgement (kept per group) can tell a
  committed offset retention has already passed (records deleted unread) and how close it is.
  `group_partition_size_bytes` likewise carries the partition's size on disk (topics with a
  size limit only, :mod:`collectors.log_dirs.reader`) to the retention margin's size limit.
- `consumer_group_state` codes: see :data:`GROUP_STATE_CODES`. confluent-kafka names only the
  classic states and gives UNKNOWN for a consumer (KIP-848) group that is Assigning or
  Reconciling; the description still carries the group's type and each member's assignment
  and target assignment, so :func:`described_state_code` tells the two apart: a member whose
  assignment is not its target yet means Reconciling, all members on target means Assigning.
  An UNKNOWN without a type (tansu) stays "the broker did not say".
- `consumer_group_type`: the group's protocol (classic, consumer), where the answer names it.
- `partition_assigned`: one sample per partition a group member owns (its labels name the
  member); a partition nobody owns has none.
- `partition_pending`: one sample per partition in a consumer group member's target assignment
  that it does not own yet (its labels name the member that will own it): assigned by the
  coordinator, not yet reconciled by the member. A classic member has no target: none.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, TopicPartition
from confluent_kafka.admin import ClusterMetadata, ConsumerGroupDescription

from collectors.base import SampleFactory
from lagwatch.membership import (
    GROUP_MEMBERS_METRIC,
    GROUP_STATE_CODE,
    GROUP_STATE_METRIC,
    GROUP_TYPE_CODE,
    GROUP_TYPE_METRIC,
    PARTITION_ASSIGNED_METRIC,
    PARTITION_PENDING_METRIC,
)
from lagwatch.samples import Sample, label_text
from lagwatch.vocabulary import GROUP_LOG_START_METRIC, Source

SOURCE = Source.ADMIN
MAX_CACHED_NAMES = 200_000

#: consumer_group_state gauge value per Kafka group state (codes: lagwatch.membership.GROUP_STATES).
GROUP_STATE_CODES: dict[ConsumerGroupState, int] = {
    ConsumerGroupState.UNKNOWN: GROUP_STATE_CODE["Unknown"],
    ConsumerGroupState.EMPTY: GROUP_STATE_CODE["Empty"],
    ConsumerGroupState.STABLE: GROUP_STATE_CODE["Stable"],
    ConsumerGroupState.PREPARING_REBALANCING: GROUP_STATE_CODE["PreparingRebalance"],
    ConsumerGroupState.COMPLETING_REBALANCING: GROUP_STATE_CODE["CompletingRebalance"],
    ConsumerGroupState.DEAD: GROUP_STATE_CODE["Dead"],
}
#: consumer_group_type gauge value per type the client names (UNKNOWN: not said, no sample).
GROUP_TYPE_CODES: dict[ConsumerGroupType, int] = {
    ConsumerGroupType.CLASSIC: GROUP_TYPE_CODE["classic"],
    ConsumerGroupType.CONSUMER: GROUP_TYPE_CODE["consumer"],
}


def known_state_code(state: object) -> int | None:
    """A state the broker named; UNKNOWN (or a missing field, as in ListGroups before v4) is None."""
    if isinstance(state, ConsumerGroupState) and state != ConsumerGroupState.UNKNOWN:
        return GROUP_STATE_CODES[state]
    return None


def group_type_code(group_type: object) -> int | None:
    """The code of a type the client names (CLASSIC, CONSUMER), else None."""
    return GROUP_TYPE_CODES.get(group_type) if isinstance(group_type, ConsumerGroupType) else None


def described_state_code(description: ConsumerGroupDescription) -> int | None:
    """The described state, with Assigning / Reconciling told from the members where the client says UNKNOWN."""
    known = known_state_code(description.state)
    if known is not None or description.type != ConsumerGroupType.CONSUMER or not description.members:
        return known
    reconciling = any(not _on_target(member) for member in description.members)
    return GROUP_STATE_CODE["Reconciling" if reconciling else "Assigning"]


def _partitions(assignment: object) -> set[tuple[str, int]]:
    topic_partitions = getattr(assignment, "topic_partitions", None) or []
    return {(tp.topic, tp.partition) for tp in topic_partitions}


def _on_target(member: object) -> bool:
    """The member owns what the target assignment gives it (a classic member has no target)."""
    target = getattr(member, "target_assignment", None)
    return target is None or _partitions(getattr(member, "assignment", None)) == _partitions(target)


class NameFilter:
    """allow/deny regexes for topic or group names (searched: anchor with ^ and $); answers cached per name."""

    def __init__(self, allow: list[str], deny: list[str]) -> None:
        self._allow = re.compile("|".join(f"(?:{p})" for p in allow)) if allow else None
        self._deny = re.compile("|".join(f"(?:{p})" for p in deny)) if deny else None
        self._seen: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        known = self._seen.get(name)
        if known is None:
            if len(self._seen) >= MAX_CACHED_NAMES:  # short-lived group ids must not grow it forever
                self._seen.clear()
            allowed = self._allow is not None and self._allow.search(name) is not None
            known = allowed and not (self._deny is not None and self._deny.search(name) is not None)
            self._seen[name] = known
        return known


def cluster_samples(metadata: ClusterMetadata, topic_allowed: NameFilter, ts: int, make: SampleFactory) -> list[Sample]:
    """Brokers, controller, partitions and leaders per broker, replication health."""

    def gauge(metric: str, value: float, **labels: str | None) -> Sample:
        return make(ts=ts, source=SOURCE, metric=metric, kind="gauge", value=value, **labels)

    replicas_per_broker: Counter[int] = Counter()
    leaders_per_broker: Counter[int] = Counter()
    under_replicated = offline = 0
    samples = [gauge("broker_count", len(metadata.brokers))]
    if metadata.controller_id >= 0:
        samples.append(gauge("controller_id", metadata.controller_id))
    for topic, topic_meta in metadata.topics.items():
        topic_under_replicated = 0
        for partition in topic_meta.partitions.values():
            replicas_per_broker.update(partition.replicas)
            if partition.leader >= 0:
                leaders_per_broker[partition.leader] += 1
            else:
                offline += 1
            if len(partition.isrs) < len(partition.replicas):
                topic_under_replicated += 1
        under_replicated += topic_under_replicated
        if topic_allowed(topic):
            samples.append(gauge("topic_partitions", len(topic_meta.partitions), topic=topic))
            samples.append(gauge("under_replicated_partitions", topic_under_replicated, topic=topic))
    for broker in sorted(set(metadata.brokers) | set(replicas_per_broker)):
        samples.append(gauge("partition_count", replicas_per_broker[broker], broker=str(broker)))
        samples.append(gauge("leader_count", leaders_per_broker[broker], broker=str(broker)))
    samples.append(gauge("under_replicated_partitions", under_replicated))
    samples.append(gauge("offline_partitions", offline))
    return samples


def partition_offset_samples(
    metric: str, kind: str, offsets: dict[tuple[str, int], int], ts: int, make: SampleFactory
) -> list[Sample]:
    """One sample per (topic, partition): `log_end_offset` (counter) and `log_start_offset` (gauge)."""
    return [
        make(ts=ts, source=SOURCE, metric=metric, kind=kind, value=offset, topic=topic, partition=partition)
        for (topic, partition), offset in offsets.items()
    ]


@dataclass
class LagCounts:
    """What one cycle skipped and why, for the log line and the tests."""

    no_commit: int = 0
    no_end_offset: int = 0
    negative: int = 0
    partition_errors: list[str] = field(default_factory=list)


def group_offset_samples(
    group_id: str,
    partitions: list[TopicPartition],
    ends: dict[tuple[str, int], int],
    topic_allowed: NameFilter,
    ts: int,
    make: SampleFactory,
    counts: LagCounts,
    starts: dict[tuple[str, int], int] | None = None,
) -> list[Sample]:
    """committed_offset and consumer_lag per partition of one group (see module doc for the rules),
    and `group_log_start_offset` where `starts` has the partition's log start.

    The hot path of a big cluster (three samples per committed offset): each partition's labels
    are formatted once for all its samples, and each metric's checks are done once per group.
    """
    committed_offset = make.metric(ts=ts, source=SOURCE, metric="committed_offset", kind="counter")
    consumer_lag = make.metric(ts=ts, source=SOURCE, metric="consumer_lag", kind="gauge")
    log_start = make.metric(ts=ts, source=SOURCE, metric=GROUP_LOG_START_METRIC, kind="gauge")
    starts = starts or {}
    samples: list[Sample] = []
    append = samples.append
    for tp in partitions:
        topic, partition, committed = tp.topic, tp.partition, tp.offset
        if not topic_allowed(topic):
            continue
        if tp.error is not None:
            counts.partition_errors.append(f"group {group_id} {topic}[{partition}]: {tp.error.str()}")
            continue
        if committed < 0:  # OFFSET_INVALID (-1001): no commit for this partition
            counts.no_commit += 1
            continue
        labels = label_text(None, topic, partition, group_id, None)
        append(committed_offset(committed, labels, None, topic, partition, group_id))
        start = starts.get((topic, partition))
        if start is not None:
            append(log_start(start, labels, None, topic, partition, group_id))
        end = ends.get((topic, partition))
        if end is None:
            counts.no_end_offset += 1
        elif end >= committed:
            append(consumer_lag(end - committed, labels, None, topic, partition, group_id))
        else:
            counts.negative += 1
            append(
                make(ts=ts, source=SOURCE, metric="consumer_lag_negative", kind="gauge", value=1,
                     topic=topic, partition=partition, group_id=group_id)
            )  # fmt: skip
    return samples


def group_partition_samples(
    metric: str, offsets: list[Sample], readings: dict[tuple[str, int], int], ts: int, make: SampleFactory
) -> list[Sample]:
    """One `metric` gauge per cycle committed_offset sample whose partition has a reading, e.g.
    `group_partition_size_bytes` (sizes, known only after the offsets' samples are built).

    Built like the committed offsets (:class:`MetricSamples`): one sample per group-partition a cycle.
    """
    if not readings:  # the usual case for sizes: no size-limited topic, so no pass over every sample
        return []
    gauge = make.metric(ts=ts, source=SOURCE, metric=metric, kind="gauge")
    return [
        gauge(value, label_text(None, s.topic, s.partition, s.group_id, None), None, s.topic, s.partition, s.group_id)
        for s in offsets
        if s.metric == "committed_offset" and s.source == SOURCE
        and (value := readings.get((s.topic, s.partition))) is not None  # type: ignore[arg-type]
    ]  # fmt: skip


class GroupStateSamples:
    """State code, member count and type code of each group in one cycle, each only when the broker
    reported it: built like the committed offsets (:class:`MetricSamples`), since a big cluster
    has thousands of groups a cycle."""

    def __init__(self, ts: int, make: SampleFactory) -> None:
        self._makers = [
            make.metric(ts=ts, source=SOURCE, metric=metric, kind="gauge")
            for metric in (GROUP_STATE_METRIC, GROUP_MEMBERS_METRIC, GROUP_TYPE_METRIC)
        ]

    def __call__(
        self, group_id: str, state: int | None, members: int | None, group_type: int | None = None
    ) -> list[Sample]:
        labels = label_text(None, None, None, group_id, None)
        return [
            maker(value, labels, None, None, None, group_id)
            for maker, value in zip(self._makers, (state, members, group_type), strict=True)
            if value is not None
        ]


def partition_owner_samples(
    group_id: str, description: ConsumerGroupDescription, topic_allowed: NameFilter, ts: int, make: SampleFactory
) -> list[Sample]:
    """`partition_assigned` = 1 for each partition a member of the group owns, labelled with that
    member's id, client id and host: who consumes what, as the group coordinator says."""
    samples: list[Sample] = []
    for member in description.members or []:
        assigned = member.assignment.topic_partitions if member.assignment is not None else None
        owner = {"client_id": member.client_id, "member_id": member.member_id, "host": member.host}
        for tp in assigned or []:
            if topic_allowed(tp.topic):
                samples.append(
                    make.member(ts=ts, source=SOURCE, metric=PARTITION_ASSIGNED_METRIC, kind="gauge", value=1,
                                group_id=group_id, topic=tp.topic, partition=tp.partition, **owner)
                )  # fmt: skip
    return samples


def partition_pending_samples(
    group_id: str, description: ConsumerGroupDescription, topic_allowed: NameFilter, ts: int, make: SampleFactory
) -> list[Sample]:
    """`partition_pending` = 1 for each partition in a member's target assignment that it does
    not own yet, labelled with that member: where the group is going, before it gets there."""
    samples: list[Sample] = []
    for member in description.members or []:
        target = getattr(member, "target_assignment", None)
        if target is None:
            continue
        owned = _partitions(member.assignment)
        owner = {"client_id": member.client_id, "member_id": member.member_id, "host": member.host}
        for topic, partition in sorted(_partitions(target) - owned):
            if topic_allowed(topic):
                samples.append(
                    make.member(ts=ts, source=SOURCE, metric=PARTITION_PENDING_METRIC, kind="gauge", value=1,
                                group_id=group_id, topic=topic, partition=partition, **owner)
                )  # fmt: skip
    return samples
