"""Consumer-group membership in the stream: who owns each partition, the group's state and
member count, and the rebalances seen; kept beside the group's lag state (same bucket, ``step.py``).

Input, routed to the group's bucket by ``spark_jobs/route.py``: the admin collector's `partition_assigned`
samples (one per owned partition and cycle, labelled with the owner: member_id, client_id,
host) and the group's `consumer_group_state` / `consumer_group_members` / `consumer_group_type` samples;
the same state and member metrics from the commit log (source commitlog), at the time of each membership change.

Rules (also in docs/rollups.md):

- **Same cycle.** A lag_1m row names the owner read in the same collector cycle (same ts) as
  the row's newest observation, and a group_status row the state and member count of the cycle
  of its updated_at, as lag pairs a committed offset with the end offset of its own cycle. No
  reading for that cycle (the describe did not answer, nobody owned the partition, or the
  sample is still on its way) leaves them NULL, never an older cycle's owner; a reading that
  arrives in a later batch than its observation writes the row again, with it.
- **Owner changes.** A reading whose member differs from the partition's previous reading is
  one change, at its ts. ``lag_1m.owner_changes`` counts them after the partition's previous
  minute's observation up to the row's (``step.changes_from_ms``), so a change read between
  two minutes' observations counts once, in the later row.
- **Rebalances.** With the commit log, the increases of the group's ``consumer_group_rebalances_total``
  (its generation or epoch) within the lag window (``lag.window_s`` up to updated_at): every
  rebalance, however many fell between two cycles (``rebalances.py``). Without it (no such
  reading for the group), the collector cycles within the window at which the group was
  rebalancing, its member count differed from the previous reading, or any of its partitions
  changed owner. The seconds it spent rebalancing come from its state readings (``rebalances.py``).
- **Type.** A group's type is its newest `consumer_group_type` reading (not only the same
  cycle's): the protocol changes only when the group migrates between classic and consumer,
  and the rows name the type it had then, so its history stays one group throughout. A consumer
  group's epoch (`consumer_group_epoch`, from the commit log) is kept the same way.
- **Pending.** A `partition_pending` reading names the member a consumer (KIP-848) group has
  assigned the partition to before that member owns it; ``lag_1m.owner_pending`` names it under
  the same-cycle rule as the owner, so a reconciled cycle (no pending reading) leaves it NULL.
- **The log's word.** A commit-log reading is the coordinator's own record of a change, not a
  poll that may catch a passing moment: a group the log recorded going Empty counts as empty
  for ``lag.empty_cycles`` at once (``Membership.logged_empty``), until a reading with members.
  A log reading newer than the group's newest observation has its group judged again as of
  that reading (``step.py``), so a group whose last member left is STOP within a trigger.
- **State.** Per group: each partition's newest owner reading with the times of its owner
  changes, and the newest group reading with the times of its rebalance events, both kept for
  the lag window. A group silent for two windows behind the watermark is forgotten, as its lag
  state is.
"""

from __future__ import annotations

import pickle
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from lagwatch.membership import (
    EMPTY_CODES,
    GROUP_EPOCH_METRIC,
    GROUP_STATE_METRIC,
    GROUP_TYPE_METRIC,
    PARTITION_ASSIGNED_METRIC,
    PARTITION_PENDING_METRIC,
    REBALANCES_METRIC,
    REBALANCING_CODES,
    UNKNOWN_CODE,
    group_state_name,
    group_type_name,
)
from lagwatch.vocabulary import Source
from spark_jobs.lag import rebalances as rebalance_log
from spark_jobs.lag.rules import Membership
from spark_jobs.windows import series_labels

GroupKey = tuple[str, str]
Where = tuple[str, int]
#: member_id, client_id, host
Owner = tuple[str | None, str | None, str | None]
_LABELS: tuple[str, ...] = ("cluster", "source", "metric", "group_id", "topic", "partition", "client_id")
_LOG_SOURCE = Source.COMMITLOG.value
#: Slots of an owner reading and of a group reading (plain lists: they pickle at C speed).
_TS, _MEMBER, _CLIENT, _HOST, _CHANGES = range(5)
_STATE, _MEMBERS, _PREVIOUS_MEMBERS, _EVENTS, _EMPTY_RUN, _OWNERS_TS, _TYPE, _LOG_EMPTY, _EPOCH = range(1, 10)
_GROUP_SLOTS = _EPOCH + 1
#: Stamps an empty run keeps: its first and the newest few (enough to count up to empty_cycles).
_EMPTY_RUN_KEPT = 8


@dataclass(slots=True)
class GroupMembership:
    """One group's newest readings and the times of its owner changes and rebalance events."""

    #: (topic, partition) -> [ts, member_id, client_id, host, [owner change ts, …]]
    owners: dict[Where, list[Any]] = field(default_factory=dict)
    #: [ts, state code, members, the previous reading's members, [rebalance event ts, …],
    #:  [ts of each cycle in the current run of readings without members (first + newest)],
    #:  the newest cycle that read any owner, [ts, code] of the newest type reading,
    #:  when the commit log recorded the current empty run (-1: it did not),
    #:  [ts, epoch] of the newest group epoch reading]
    group: list[Any] = field(default_factory=lambda: [-1, None, None, None, [], [], -1, [-1, None], -1, [-1, None]])
    #: (topic, partition) -> [ts, member_id, client_id, host] of its newest pending reading
    pending: dict[Where, list[Any]] = field(default_factory=dict)
    #: the rebalance counts and rebalancing states read (spark_jobs/lag/rebalances.py)
    rebalancing: rebalance_log.Timelines = field(default_factory=rebalance_log.empty)

    def observe_owner(self, where: Where, ts: int, owner: Owner, keep_ms: int) -> None:
        """Take one cycle's owner of a partition; an older or repeated cycle changes nothing."""
        self.group[_OWNERS_TS] = max(self.group[_OWNERS_TS], ts)
        slot = self.owners.get(where)
        if slot is None:
            self.owners[where] = [ts, *owner, []]
            return
        if ts <= slot[_TS]:
            return
        changes = slot[_CHANGES]
        if slot[_MEMBER] != owner[0]:
            changes.append(ts)
        del changes[: bisect_left(changes, ts - keep_ms)]
        slot[_TS : _HOST + 1] = [ts, *owner]

    def observe_pending(self, where: Where, ts: int, owner: Owner) -> None:
        """Take one cycle's member a partition is assigned to but not owned by yet."""
        slot = self.pending.get(where)
        if slot is None or ts > slot[_TS]:
            self.pending[where] = [ts, *owner]

    def observe_group(self, ts: int, metric: str, value: float, keep_ms: int, from_log: bool = False) -> None:
        """Take one cycle's (or one logged change's) state, member count, type or epoch (each its own sample)."""
        group = self.group
        if metric == REBALANCES_METRIC:
            rebalance_log.observe_count(self.rebalancing, ts, value, keep_ms)
            return
        if metric == GROUP_STATE_METRIC:
            rebalance_log.observe_state(self.rebalancing, ts, int(value) in REBALANCING_CODES, keep_ms)
        newest_kept = {GROUP_TYPE_METRIC: _TYPE, GROUP_EPOCH_METRIC: _EPOCH}.get(metric)
        if newest_kept is not None:
            if ts >= group[newest_kept][0]:
                group[newest_kept] = [ts, int(value)]
            return
        if ts < group[_TS]:
            return
        if ts > group[_TS]:
            if group[_MEMBERS] is not None:
                group[_PREVIOUS_MEMBERS] = group[_MEMBERS]
            group[_TS], group[_STATE], group[_MEMBERS] = ts, None, None
        events = group[_EVENTS]
        if metric == GROUP_STATE_METRIC:
            group[_STATE] = int(value)
            rebalanced = group[_STATE] in REBALANCING_CODES
            _extend_empty_run(group[_EMPTY_RUN], ts, group[_STATE])
            if group[_STATE] not in EMPTY_CODES:
                group[_LOG_EMPTY] = -1
            elif from_log and group[_LOG_EMPTY] < 0:
                group[_LOG_EMPTY] = ts
        else:
            group[_MEMBERS] = int(value)
            rebalanced = group[_PREVIOUS_MEMBERS] is not None and group[_MEMBERS] != group[_PREVIOUS_MEMBERS]
        if rebalanced and (not events or events[-1] != ts):
            events.append(ts)
        del events[: bisect_left(events, ts - keep_ms)]

    def owner_at(self, where: Where, ts: int, batch: BatchReadings, key: GroupKey) -> Owner | None:
        """The owner read in the cycle at `ts` (this batch's readings, or the newest kept)."""
        slot = self.owners.get(where)
        if slot is not None and slot[_TS] == ts:
            return slot[_MEMBER], slot[_CLIENT], slot[_HOST]
        return batch.owners.get((key, where, ts))

    def pending_at(self, where: Where, ts: int, batch: BatchReadings, key: GroupKey) -> str | None:
        """The member the partition was assigned to but not owned by in the cycle at `ts` ("client on host")."""
        slot = self.pending.get(where)
        member = (slot[_MEMBER], slot[_CLIENT], slot[_HOST]) if slot is not None and slot[_TS] == ts else None
        member = member or batch.pending.get((key, where, ts))
        return _owner_text(member) if member is not None else None

    def group_at(self, ts: int, batch: BatchReadings, key: GroupKey) -> tuple[str | None, int | None]:
        """(state name, members) read in the cycle at `ts`; None where that cycle has no reading."""
        group = self.group
        reading = (group[_STATE], group[_MEMBERS]) if group[_TS] == ts else batch.groups.get((key, ts), (None, None))
        return group_state_name(reading[0]), reading[1]

    def evidence(self, where: Where, ts: int, batch: BatchReadings, key: GroupKey) -> Membership | None:
        """The coordinator's word at the cycle `ts` for the judgement; None without a known state."""
        group = self.group
        state = group[_STATE] if group[_TS] == ts else batch.groups.get((key, ts), (None, None))[0]
        if state is None or state == UNKNOWN_CODE:  # tansu: members unknown, whatever it counts
            return None
        run = group[_EMPTY_RUN]
        empty = state in EMPTY_CODES and bool(run) and run[0] <= ts
        owner = self.owner_at(where, ts, batch, key)
        return Membership(
            empty_cycles=bisect_right(run, ts) if empty else 0,
            empty_since_ms=run[0] if empty else -1,
            owner=_owner_text(owner) if owner is not None and owner[0] is not None else None,
            # No owner at all in that cycle: DescribeGroups is off or failed, so "nobody" is unknown.
            owners_known=empty or owner is not None or group[_OWNERS_TS] == ts or (key, ts) in batch.owner_cycles,
            logged_empty=empty and 0 <= group[_LOG_EMPTY] <= ts,
        )

    @property
    def group_type(self) -> str | None:
        """The newest type reading's name ("classic", "consumer", …); None before any."""
        return group_type_name(self.group[_TYPE][1])

    @property
    def group_epoch(self) -> int | None:
        """The newest group epoch reading (consumer groups, from the commit log); None before any."""
        return self.group[_EPOCH][1]

    def owner_changes(self, where: Where, start_ms: int, end_ms: int) -> int:
        slot = self.owners.get(where)
        return 0 if slot is None else _count_between(slot[_CHANGES], start_ms, end_ms)

    def rebalances(self, start_ms: int, end_ms: int) -> int:
        """Rebalances in [start_ms, end_ms]: every one the commit log counted, else the cycles with a
        rebalance event or an owner change."""
        logged = rebalance_log.count(self.rebalancing, start_ms, end_ms)
        if logged is not None:
            return logged
        stamps = {ts for ts in self.group[_EVENTS] if start_ms <= ts <= end_ms}
        for slot in self.owners.values():
            stamps.update(ts for ts in slot[_CHANGES] if start_ms <= ts <= end_ms)
        return len(stamps)

    def rebalancing_s(self, start_ms: int, end_ms: int) -> float:
        """Seconds of [start_ms, end_ms] the group was rebalancing, as its state readings tell."""
        return rebalance_log.seconds(self.rebalancing, start_ms, end_ms)

    def forget_before(self, oldest_ms: int) -> bool:
        """Drop partitions (and the group reading) not read since `oldest_ms`; True when nothing is left."""
        for where in [w for w, slot in self.owners.items() if slot[_TS] < oldest_ms]:
            del self.owners[where]
        for where in [w for w, slot in self.pending.items() if slot[_TS] < oldest_ms]:
            del self.pending[where]
        return not self.owners and self.group[_TS] < oldest_ms


def _extend_empty_run(run: list[int], ts: int, state: int) -> None:
    """Add a cycle to the run of readings without members, or end the run (in place)."""
    if state not in EMPTY_CODES:
        run.clear()
    elif not run or ts > run[-1]:
        run.append(ts)
        if len(run) > _EMPTY_RUN_KEPT:
            del run[1]  # keep the first: the run's start is what the reason names


def _owner_text(owner: Owner) -> str:
    """ "client-1 on /10.0.0.5" (the member id when the client id is missing)."""
    member, client, host = owner
    return f"{client or member} on {host}" if host else f"{client or member}"


def _count_between(stamps: list[int], start_ms: int, end_ms: int) -> int:
    return bisect_right(stamps, end_ms) - bisect_left(stamps, start_ms)


@dataclass
class BatchReadings:
    """This batch's readings by cycle, for rows of cycles older than the newest kept, and what
    they touched (so rows written before their reading arrived are written again)."""

    owners: dict[tuple[GroupKey, Where, int], Owner] = field(default_factory=dict)
    pending: dict[tuple[GroupKey, Where, int], Owner] = field(default_factory=dict)
    #: (group, ts) of every cycle in the batch that read an owner of the group.
    owner_cycles: set[tuple[GroupKey, int]] = field(default_factory=set)
    groups: dict[tuple[GroupKey, int], list[Any]] = field(default_factory=dict)
    #: Per group, the newest commit-log reading of the batch (step.py judges the group as of it).
    log_readings: dict[GroupKey, int] = field(default_factory=dict)
    touched_partitions: dict[GroupKey, dict[Where, set[int]]] = field(default_factory=dict)
    touched_groups: dict[GroupKey, set[int]] = field(default_factory=dict)


def fold_readings(samples: pd.DataFrame, memberships: dict[GroupKey, GroupMembership], keep_ms: int) -> BatchReadings:
    """Fold a batch's membership samples into the groups' state (in place), in time order."""
    batch = BatchReadings()
    if samples.empty:
        return batch
    labels = series_labels(samples["series_key"].to_numpy(), _LABELS)
    stamps = samples["ts"].to_numpy(np.int64)
    values = samples["value"].to_numpy(np.float64)
    member_ids, hosts = samples["member_id"].to_numpy(object), samples["host"].to_numpy(object)
    for i in np.argsort(stamps, kind="stable").tolist():
        key, ts = (labels["cluster"][i], labels["group_id"][i]), int(stamps[i])
        membership = memberships.get(key) or memberships.setdefault(key, GroupMembership())
        if labels["metric"][i] in (PARTITION_ASSIGNED_METRIC, PARTITION_PENDING_METRIC):
            where = (labels["topic"][i], int(labels["partition"][i]))
            owner = (_text(member_ids[i]), labels["client_id"][i], _text(hosts[i]))
            if labels["metric"][i] == PARTITION_ASSIGNED_METRIC:
                membership.observe_owner(where, ts, owner, keep_ms)
                batch.owners[(key, where, ts)] = owner
                batch.owner_cycles.add((key, ts))
            else:
                membership.observe_pending(where, ts, owner)
                batch.pending[(key, where, ts)] = owner
            batch.touched_partitions.setdefault(key, {}).setdefault(where, set()).add(ts)
        elif labels["metric"][i] in (GROUP_TYPE_METRIC, GROUP_EPOCH_METRIC, REBALANCES_METRIC):
            membership.observe_group(ts, labels["metric"][i], float(values[i]), keep_ms)
        else:
            metric = labels["metric"][i]
            from_log = labels["source"][i] == _LOG_SOURCE
            membership.observe_group(ts, metric, float(values[i]), keep_ms, from_log)
            if from_log:
                batch.log_readings[key] = max(ts, batch.log_readings.get(key, ts))
            reading = batch.groups.setdefault((key, ts), [None, None])
            reading[0 if metric == GROUP_STATE_METRIC else 1] = int(values[i])
            batch.touched_groups.setdefault(key, set()).add(ts)
    return batch


def _text(value: Any) -> str | None:
    """A member label from pandas: None for NULL (which may come as None or NaN)."""
    return value if isinstance(value, str) else None


def encode(memberships: dict[GroupKey, GroupMembership]) -> bytes:
    plain = {key: (m.owners, m.group, m.pending, m.rebalancing) for key, m in memberships.items()}
    return pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)


def decode(blob: bytes) -> dict[GroupKey, GroupMembership]:
    """State saved before empty runs (and the owners' newest cycle, the type, the log's empty run, the
    epoch, the pending partitions, the rebalance timelines) were kept gets them empty."""
    saved = pickle.loads(blob)
    return {key: GroupMembership(state[0], _upgraded(state[1]), *state[2:]) for key, state in saved.items()}


def _upgraded(group: list[Any]) -> list[Any]:
    """A group reading saved by an older version, with the slots it lacks added empty."""
    missing = [[], -1, [-1, None], -1, [-1, None]]
    return [*group, *missing[len(missing) - (_GROUP_SLOTS - len(group)) :]] if len(group) < _GROUP_SLOTS else group


def forget_silent(memberships: dict[GroupKey, GroupMembership], oldest_ms: int) -> None:
    for key in [k for k, m in memberships.items() if m.forget_before(oldest_ms)]:
        del memberships[key]
