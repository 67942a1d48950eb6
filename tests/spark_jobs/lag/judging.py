"""Feeding a fresh PartitionTracker observations and commits, for the lag unit tests."""

from __future__ import annotations

from lagwatch.config import LagConfig
from spark_jobs.lag.rules import Membership, Thresholds
from spark_jobs.lag.tracker import PartitionReport, PartitionTracker

PERIOD_MS = 60_000


def track(
    observations: list[tuple[int, int, int]], config: LagConfig | None = None, group: str = "g"
) -> PartitionReport:
    """Feed (ts_s, committed, lag) observations to a fresh tracker; report as of the last one."""
    thresholds = Thresholds.for_group(config or LagConfig(), group)
    tracker = PartitionTracker()
    for ts_s, committed, lag in observations:
        assert tracker.observe(ts_s * 1000, committed, lag, thresholds, PERIOD_MS)
    return tracker.report(thresholds)


def statuses_with_commits(
    observations: list[tuple[int, int, int]], commits: list[tuple[int, int]], config: LagConfig
) -> list[PartitionReport]:
    """Feed (ts_s, committed, lag) observations and (ts_s, offset) commits in time order; a report per observation."""
    thresholds = Thresholds.for_group(config, "g")
    tracker = PartitionTracker()
    events = sorted([(ts, 0, value) for ts, value in commits] + [(ts, 1, (c, lag)) for ts, c, lag in observations])
    reports = []
    for ts_s, is_observation, value in events:
        if is_observation:
            assert tracker.observe(ts_s * 1000, value[0], value[1], thresholds, PERIOD_MS)
            reports.append(tracker.report(thresholds))
        else:
            assert tracker.commit(ts_s * 1000, value, thresholds)
    return reports


def judged(
    observations: list[tuple[int, int, int]],
    membership: Membership | None,
    config: LagConfig | None = None,
    commits: list[tuple[int, int]] = (),
) -> PartitionReport:
    """Observations (ts_s, committed, lag) and commits (ts_s, offset); the newest judged with `membership`."""
    thresholds = Thresholds.for_group(config or LagConfig(), "g")
    tracker = PartitionTracker()
    for ts_s, offset in commits:
        tracker.commit(ts_s * 1000, offset, thresholds)
    for ts_s, committed, lag in observations:
        assert tracker.observe(ts_s * 1000, committed, lag, thresholds, PERIOD_MS)
    return tracker.report(thresholds, membership)


OWNED = Membership(empty_cycles=0, empty_since_ms=-1, owner="app-1 on /10.0.0.1")

UNOWNED = Membership(empty_cycles=0, empty_since_ms=-1, owner=None)


def empty(cycles: int, since_s: int) -> Membership:
    return Membership(empty_cycles=cycles, empty_since_ms=since_s * 1000, owner=None)
