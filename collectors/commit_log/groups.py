"""Group membership as `__consumer_offsets` tells it, record by record (no I/O, no lock).

The group coordinator writes a record for every membership fact it changes, so the log gives
each change at the moment it happened, where DescribeGroups gives one picture per cycle:

- a classic group: its GroupMetadata record (written when a rebalance completes and when the
  last member leaves) holds the generation and every member with its assignment. No members =
  Empty. The record a first JoinGroup writes (generation 0, no protocol) is a group being
  created, not a state: it changes nothing here.
- a consumer (KIP-848) group: one record per fact (group epoch, each member, each member's
  current assignment and target assignment, the target assignment's epoch). Its state is computed
  as the coordinator computes it: no members Empty; group epoch ahead of the target assignment
  Assigning; a member not yet at the target's epoch, or not STABLE, Reconciling; else Stable. A
  change also gives the group epoch, each member's epoch, and the partitions pending: in a
  member's target assignment but not yet in its current one (it will own them once reconciled).

A group tombstone (the group was deleted, or converted between the classic and consumer
protocols, where the other protocol's records follow at once) drops that protocol's state and
publishes nothing: a group is only deleted once it is Empty, which was already published.

After each batch of records, :meth:`GroupBook.changes` gives one :class:`GroupChange` per group
whose state, members, owners, epochs, pending partitions or generation differ from what was last given, at the time
of its newest record: a burst of records (a member leaving writes four) is one change. Each change carries the
group's rebalance count (:attr:`GroupChange.rebalances`: the classic generation, the consumer group epoch), so
rebalances folded into one change are still counted, by its increase.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from collectors.commit_log.decode import GroupMetadata
from collectors.commit_log.records import (
    CONSUMER_CURRENT_ASSIGNMENT,
    CONSUMER_GROUP_METADATA,
    CONSUMER_MEMBER_METADATA,
    CONSUMER_TARGET_MEMBER,
    CONSUMER_TARGET_METADATA,
    MEMBER_STABLE,
    CurrentAssignment,
    MemberMetadata,
    decode_current_assignment,
    decode_epoch,
    decode_member_metadata,
    decode_target_member,
)

#: (topic, partition, member_id, client_id, host): one owned (or pending) partition.
Owner = tuple[str, int, str, str, str]
#: (topic id, partition): how a consumer group's records name a partition.
TopicIdPartitions = tuple[tuple[bytes, int], ...]
#: (member_id, client_id, host, member epoch): one member's epoch.
MemberEpoch = tuple[str, str, str, int]


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A group's membership after a change, as the coordinator wrote it at `ts` (epoch ms)."""

    group_id: str
    ts: int
    #: Kafka's state name: Empty, Stable, Assigning, Reconciling
    state: str
    members: int
    owners: tuple[Owner, ...]
    #: "classic" or "consumer": which protocol's records told it
    protocol: str
    #: the group epoch (consumer groups; None for a classic group's record)
    epoch: int | None = None
    #: each member's epoch (consumer groups)
    member_epochs: tuple[MemberEpoch, ...] = ()
    #: partitions in a member's target assignment it does not own yet, named by that member
    pending: tuple[Owner, ...] = ()
    #: the coordinator's count of the group's rebalances: a classic group's generation, a consumer
    #: group's epoch (None before a consumer group's epoch record)
    rebalances: int | None = None


@dataclass(slots=True)
class ConsumerGroup:
    """A KIP-848 group's facts, as its records left them."""

    epoch: int = -1
    target_epoch: int = -1
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    assignments: dict[str, CurrentAssignment] = field(default_factory=dict)
    targets: dict[str, TopicIdPartitions] = field(default_factory=dict)

    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.epoch > self.target_epoch:
            return "Assigning"
        for member_id in self.members:
            assignment = self.assignments.get(member_id)
            if assignment is None or assignment.member_epoch != self.target_epoch or assignment.state != MEMBER_STABLE:
                return "Reconciling"
        return "Stable"


class GroupBook:
    """Every allowed group's membership, fed record by record; topic ids named by `topic_name`."""

    def __init__(self, topic_name: Callable[[bytes], str | None]) -> None:
        self._topic_name = topic_name
        self._classic: dict[str, GroupMetadata] = {}
        self._consumer: dict[str, ConsumerGroup] = {}
        self._given: dict[str, tuple[object, ...]] = {}
        self._touched: dict[str, int] = {}  # group -> newest record ts since the last changes()
        self._newest: dict[str, int] = {}  # group -> its newest record ts

    def classic(self, group: str, metadata: GroupMetadata | None, ts: int) -> None:
        """A GroupMetadata record (None: its tombstone)."""
        if metadata is None:
            self._classic.pop(group, None)
        elif metadata.generation == 0 and not metadata.protocol_type and not metadata.members:
            return  # created by a first JoinGroup: its members are still joining
        else:
            self._classic[group] = metadata
        self._touch(group, ts)

    def consumer(self, record_type: int, group: str, member: str | None, value: bytes | None, ts: int) -> None:
        """A consumer-group record of a type in commit_log_records.DECODED (value None: tombstone)."""
        if record_type == CONSUMER_GROUP_METADATA and value is None:
            self._consumer.pop(group, None)
            self._touch(group, ts)
            return
        state = self._consumer.get(group)
        if state is None:
            if value is None:
                return
            state = self._consumer[group] = ConsumerGroup()
        if record_type == CONSUMER_GROUP_METADATA and value is not None:
            state.epoch = decode_epoch(value)
        elif record_type == CONSUMER_TARGET_METADATA:
            state.target_epoch = decode_epoch(value) if value is not None else -1
        elif record_type == CONSUMER_MEMBER_METADATA and member is not None:
            _put(state.members, member, decode_member_metadata(value) if value is not None else None)
        elif record_type == CONSUMER_CURRENT_ASSIGNMENT and member is not None:
            _put(state.assignments, member, decode_current_assignment(value) if value is not None else None)
        elif record_type == CONSUMER_TARGET_MEMBER and member is not None:
            _put(state.targets, member, decode_target_member(value) if value is not None else None)
        self._touch(group, ts)

    def forget(self, group: str) -> None:
        self._classic.pop(group, None)
        self._consumer.pop(group, None)
        self._given.pop(group, None)
        self._newest.pop(group, None)

    def _touch(self, group: str, ts: int) -> None:
        self._touched[group] = max(ts, self._touched.get(group, ts))
        self._newest[group] = self._touched[group]

    def retouch_consumer_groups(self) -> None:
        """Look at every consumer group again (topic ids were just named: its owners may be new)."""
        for group in self._consumer:
            self._touched.setdefault(group, self._newest.get(group, -1))

    def changes(self, since_ts: int = -1) -> list[GroupChange]:
        """One change per group touched since the last call whose membership differs from the
        last one given; those older than `since_ts` are remembered but not returned."""
        touched, self._touched = self._touched, {}
        found: list[GroupChange] = []
        for group, ts in touched.items():
            change = self.current(group, ts)
            if change is None:
                self._given.pop(group, None)
                self._newest.pop(group, None)
                continue
            picture = (
                change.state,
                change.members,
                change.owners,
                change.epoch,
                change.member_epochs,
                change.pending,
                change.rebalances,  # a new generation is a change, even with the same owners
            )
            if self._given.get(group) != picture:
                self._given[group] = picture
                if ts >= since_ts:
                    found.append(change)
        return found

    def current(self, group: str, ts: int) -> GroupChange | None:
        """The group's membership now (None: no record of it, or deleted)."""
        consumer = self._consumer.get(group)
        if consumer is not None:
            return self._consumer_change(group, ts, consumer)
        classic = self._classic.get(group)
        if classic is None:
            return None
        owners = tuple(
            (topic, partition, m.member_id, m.client_id, m.client_host)
            for m in classic.members
            for topic, partition in m.assignment
        )
        state = "Stable" if classic.members else "Empty"
        return GroupChange(group, ts, state, len(classic.members), owners, "classic", rebalances=classic.generation)

    def _consumer_change(self, group: str, ts: int, consumer: ConsumerGroup) -> GroupChange:
        owners: list[Owner] = []
        pending: list[Owner] = []
        epochs: list[MemberEpoch] = []
        for member_id, meta in consumer.members.items():
            assignment = consumer.assignments.get(member_id)
            owned = assignment.partitions if assignment is not None else ()
            owners.extend(self._named(owned, member_id, meta))
            pending.extend(self._named(_not_in(consumer.targets.get(member_id, ()), owned), member_id, meta))
            if assignment is not None:
                epochs.append((member_id, meta.client_id, meta.client_host, assignment.member_epoch))
        epoch = consumer.epoch if consumer.epoch >= 0 else None
        return GroupChange(group, ts, consumer.state(), len(consumer.members), tuple(owners), "consumer",
                           epoch, tuple(epochs), tuple(pending), epoch)  # fmt: skip

    def _named(self, partitions: TopicIdPartitions, member_id: str, meta: MemberMetadata) -> list[Owner]:
        """The partitions (by topic id) as owners named by topic, those of unknown or denied topics left out."""
        return [
            (topic, partition, member_id, meta.client_id, meta.client_host)
            for topic_id, partition in partitions
            if (topic := self._topic_name(topic_id)) is not None
        ]


def _not_in(target: TopicIdPartitions, owned: TopicIdPartitions) -> TopicIdPartitions:
    owned_set = set(owned)
    return tuple(pair for pair in target if pair not in owned_set)


def _put(facts: dict, member: str, fact: object | None) -> None:
    """Set a member's fact, or drop it on a tombstone."""
    if fact is None:
        facts.pop(member, None)
    else:
        facts[member] = fact
