"""A group's status from its partitions' reports: the worst partition's, with the facts that explain it.

The reason names that partition and its owner, how many partitions are not OK, a hot
partition holding most of the group's lag, the rebalances in the window and, when the status
is not OK, the cluster's broker events of the window (all phrased by ``reasons.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from lagwatch.lake import TimeLagMethod
from lagwatch.vocabulary import STATUS_ORDER, STATUS_SEVERITY
from spark_jobs.lag import reasons
from spark_jobs.lag.tracker import PartitionReport

#: A partition is hot when its lag is at least HOT_RATIO times the mean of the group's others
#: and at least HOT_MIN_LAG records (a few records of skew explain nothing).
HOT_RATIO, HOT_MIN_LAG = 5, 100
_HEALTHY = STATUS_ORDER[0]


@dataclass(frozen=True, slots=True)
class GroupSummary:
    status: str
    rule: str
    reason: str
    total_lag: int
    max_lag: int
    max_time_lag_s: float | None
    max_time_lag_method: str
    partitions: int
    topics: str


@dataclass(frozen=True, slots=True)
class GroupFacts:
    """What the group's membership and its cluster's brokers add to its reason."""

    #: The owner of a (topic, partition) in the cycle of its newest observation, or None.
    owner_of: Callable[[tuple[str, int]], str | None] = lambda _where: None
    rebalances: int = 0
    window_s: float = 0.0
    #: The cluster's broker events of the window as a clause (None: none); asked only when not OK.
    broker_events: Callable[[], str | None] = lambda: None
    #: The rebalance storm's clause (reasons.rebalance_storm) when the group is in one, else None.
    storm: str | None = None


def summarize_group(
    partitions: Iterable[tuple[str, int, PartitionReport]], facts: GroupFacts | None = None
) -> GroupSummary:
    """A group's status is its worst partition's; the reason says why, in one line."""
    rows = sorted(partitions, key=lambda item: (item[0], item[1]))
    if not rows:
        raise ValueError("summarize_group needs at least one partition report")
    facts = facts or GroupFacts()
    worst_topic, worst_partition, worst = max(rows, key=lambda item: STATUS_SEVERITY.get(item[2].status, 0))
    not_ok = sum(1 for _, _, report in rows if report.status != "OK")
    reports = [report for _, _, report in rows]
    reason = reasons.group(
        worst.reason,
        (worst_topic, worst_partition),
        facts.owner_of((worst_topic, worst_partition)),
        not_ok,
        len(rows),
        hot_partition(rows),
        facts.rebalances,
        facts.window_s,
        facts.broker_events() if worst.status != _HEALTHY else None,
        facts.storm,
    )
    return GroupSummary(
        status=worst.status,
        rule=worst.rule,
        reason=reason,
        total_lag=sum(report.lag for _, _, report in rows),
        max_lag=max(report.lag for _, _, report in rows),
        max_time_lag_s=max((r.time_lag_s for r in reports if r.time_lag_s is not None), default=None),
        max_time_lag_method=max_time_lag_method(reports),
        partitions=len(rows),
        topics=",".join(sorted({topic for topic, _, _ in rows})),
    )


def max_time_lag_method(reports: Sequence[PartitionReport]) -> str:
    """How the group's maximum time lag is known: a lower bound if any partition's is one (the
    group's maximum is then at least the value), else the method of the partition holding it."""
    known = [r for r in reports if r.time_lag_s is not None]
    if not known:
        return TimeLagMethod.UNKNOWN
    if any(r.time_lag_method == TimeLagMethod.LOWER_BOUND for r in known):
        return TimeLagMethod.LOWER_BOUND
    return max(known, key=lambda r: r.time_lag_s or 0.0).time_lag_method


def hot_partition(rows: Sequence[tuple[str, int, PartitionReport]]) -> str | None:
    """ "hot partition t/3 has 92% of the lag" when one partition's lag dwarfs the others'."""
    if len(rows) < 2:
        return None
    topic, partition, top = max(rows, key=lambda item: item[2].lag)
    total = sum(report.lag for _, _, report in rows)
    others_mean = (total - top.lag) / (len(rows) - 1)
    if top.lag < HOT_MIN_LAG or top.lag < HOT_RATIO * others_mean:
        return None
    return reasons.hot_partition(topic, partition, 100 * top.lag / total)
