"""The rows of a cluster that cannot be read: every known group and partition of it ERR.

Why rows at all: without them, a cluster whose admin collector fails simply stops producing
lag rows, and the newest rows (the dashboard's and the API's "current" values) keep showing
the lag of the last cycle that worked, as if it were still true. Instead each failed cycle
(``reachability.py``) writes, for every group of the cluster the state knows, a group_status row
and a lag_1m row per partition as of that cycle: status ERR by the rule ``unreachable`` (the
first of ``rules.RULES``), the offsets, lag, rates and time lag NULL, and a reason naming the
cluster, since when it is unreachable and what was last observed (a group's: its last status).
Membership read in an earlier cycle is not current either, so state, members and owners are
NULL too; the group's type, a property of the group, stays.

The partitions are those the group's status would count (seen within one lag window of the
group's newest observation); a group known only from commits has no observation to name and
gets no row. Rows are written only for a failed cycle newer than the group's newest
observation, so a late `up` = 0 never hides a newer reading.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lagwatch.lake import TimeLagMethod, written_columns
from spark_jobs.lag import reasons
from spark_jobs.lag.pairing import GroupTracks
from spark_jobs.lag.rules import Outage, Thresholds, judge
from spark_jobs.lag.tracker import PartitionTracker

Row = dict[str, Any]
#: The lag_1m columns an ERR row has a value for: the partition and its window, the verdict, and
#: the group's type (a property of the group, not a reading).
PARTITION_KNOWN: tuple[str, ...] = (
    "cluster", "window_start", "window_end", "group_id", "topic", "partition",
    "time_lag_method", "status", "reason", "rule", "group_type",
)  # fmt: skip
#: lag_1m columns an unreachable cluster has no current value for: every other one, so a column
#: added to the lake contract (measured, or read from membership) is NULL in an ERR row unasked.
PARTITION_UNMEASURED: tuple[str, ...] = tuple(c for c in written_columns("lag_1m") if c not in PARTITION_KNOWN)
#: The group_status columns an ERR row has a value for, likewise.
GROUP_KNOWN: tuple[str, ...] = (
    "cluster", "group_id", "status", "reason", "rule", "max_time_lag_method", "partitions", "topics",
    "group_type", "window_start", "updated_at",
)  # fmt: skip
#: group_status columns an unreachable cluster has no current value for: every other one.
GROUP_UNMEASURED: tuple[str, ...] = tuple(c for c in written_columns("group_status") if c not in GROUP_KNOWN)


def rows(
    groups: Mapping[tuple[str, str], GroupTracks],
    outages: Mapping[str, Outage],
    window_ms: int,
    period_ms: int,
    thresholds_for: Callable[[tuple[str, str]], Thresholds],
    last_judgement: Callable[[tuple[str, str]], Row | None],
    group_type_of: Callable[[tuple[str, str]], str | None],
) -> tuple[list[Row], list[Row]]:
    """(lag_1m rows, group_status rows) of every known group of an unreachable cluster.

    ``last_judgement`` gives a group's ordinary group_status row as of its newest observation
    (its status and total lag are named in the reason, as what was last known)."""
    partition_rows: list[Row] = []
    group_rows: list[Row] = []
    for group_key, tracks in groups.items():
        outage = outages.get(group_key[0])
        observed = {where: track for where, track in tracks.items() if track.window_ts}
        if outage is None or not observed:
            continue
        newest = max(track.last_ts_ms for track in observed.values())
        if outage.at_ms <= newest:
            continue
        recent = {where: track for where, track in observed.items() if track.last_ts_ms >= newest - window_ms}
        period = outage.at_ms - outage.at_ms % period_ms
        group_type = group_type_of(group_key)
        thresholds = thresholds_for(group_key)
        mine = [
            _partition_row(group_key, where, track, outage, thresholds, (period, period_ms), group_type)
            for where, track in sorted(recent.items())
        ]
        partition_rows += mine
        last = last_judgement(group_key)
        if last is None:  # never judged: no group status to turn ERR, its partitions' rows say it
            continue
        reason = reasons.group_unreachable(
            outage.cluster, outage.since_ms, last["status"], last["updated_at"], last["total_lag"]
        )
        group_rows.append(
            {
                **dict.fromkeys(GROUP_UNMEASURED),
                "max_time_lag_method": TimeLagMethod.UNKNOWN.value,
                "cluster": group_key[0],
                "group_id": group_key[1],
                "status": mine[0]["status"],  # every partition's: the rule applies to all alike
                "reason": reason,
                "rule": mine[0]["rule"],
                "partitions": len(recent),
                "topics": ",".join(sorted({topic for topic, _ in recent})),
                "group_type": group_type,
                "window_start": period,
                "updated_at": outage.at_ms,
            }
        )
    return partition_rows, group_rows


def _partition_row(
    group_key: tuple[str, str],
    where: tuple[str, int],
    track: PartitionTracker,
    outage: Outage,
    thresholds: Thresholds,
    window: tuple[int, int],
    group_type: str | None,
) -> Row:
    """A partition's ERR row, judged by the rules (the first, ``unreachable``, applies)."""
    verdict = judge(
        track.window_ts,
        track.window_committed,
        track.window_lag,
        track.committed_since_ms,
        None,
        thresholds,
        outage=outage,
    )
    period, period_ms = window
    return {
        **dict.fromkeys(PARTITION_UNMEASURED),
        "cluster": group_key[0],
        "window_start": period,
        "window_end": period + period_ms,
        "group_id": group_key[1],
        "topic": where[0],
        "partition": where[1],
        "time_lag_method": TimeLagMethod.UNKNOWN.value,
        "status": verdict.status,
        "reason": verdict.reason,
        "rule": verdict.rule,
        "group_type": group_type,
    }
