"""A group's rebalances and the time it spent rebalancing, kept per group beside its membership.

Two timelines, each a list of ``[ts, value]`` sorted by ts (plain lists: they pickle at C speed):

- **Counts.** The group's ``consumer_group_rebalances_total`` readings (from the commit log: a
  classic group's generation, a consumer group's epoch). The rebalances within a window are the
  increases of the readings within it over the reading before each, so N rebalances between two
  collector cycles count N. A reading below the one before (the group was deleted and made again)
  counts its own value, as a Prometheus counter reset does. Without any reading (the commit log is
  off or unreadable) :func:`count` says None and the caller counts collector cycles instead.
- **States.** Whether the group was rebalancing (PreparingRebalance, CompletingRebalance,
  Assigning, Reconciling), per state reading of either source: a reading holds until the next one,
  so the seconds within a window are those between a rebalancing reading and the next other one
  (or the window's end). Readings arrive by cycle (DescribeGroups) or by change (the commit log);
  a poll catches a rebalance already under way, so the seconds are a lower bound.

Both keep the window's readings and the newest one before it (what the window's first increase,
or its first seconds, are measured from).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Any

#: [count readings, state readings]
Timelines = list[list[list[Any]]]


def empty() -> Timelines:
    return [[], []]


def observe_count(timelines: Timelines, ts: int, value: float, keep_ms: int) -> None:
    """Take one rebalance-count reading (a repeated ts keeps the first)."""
    _insert(timelines[0], ts, int(value), keep_ms, squash_repeats=False)


def observe_state(timelines: Timelines, ts: int, rebalancing: bool, keep_ms: int) -> None:
    """Take one state reading, as rebalancing or not."""
    _insert(timelines[1], ts, rebalancing, keep_ms, squash_repeats=True)


def count(timelines: Timelines, start_ms: int, end_ms: int) -> int | None:
    """Rebalances with their reading in [start_ms, end_ms]; None without any count reading."""
    readings = timelines[0]
    if not readings:
        return None
    first = max(1, bisect_left(readings, [start_ms]))
    last = bisect_right(readings, [end_ms, float("inf")])
    total = 0
    for i in range(first, last):
        before, value = readings[i - 1][1], readings[i][1]
        total += value - before if value >= before else value
    return total


def seconds(timelines: Timelines, start_ms: int, end_ms: int) -> float:
    """Seconds of [start_ms, end_ms] the group spent rebalancing, as its state readings tell."""
    readings = timelines[1]
    spent = 0
    for i, (ts, rebalancing) in enumerate(readings):
        if not rebalancing or ts > end_ms:
            continue
        until = readings[i + 1][0] if i + 1 < len(readings) else end_ms
        spent += max(0, min(until, end_ms) - max(ts, start_ms))
    return spent / 1000


def _insert(readings: list[list[Any]], ts: int, value: Any, keep_ms: int, squash_repeats: bool) -> None:
    """Insert in ts order; a reading at the end equal to the last is dropped when `squash_repeats`
    (it changes nothing), and readings older than the newest kept one before the window go."""
    if readings and ts > readings[-1][0]:
        if not (squash_repeats and readings[-1][1] == value):
            readings.append([ts, value])
    elif not readings or readings[bisect_left(readings, [ts])][0:1] != [ts]:
        insort(readings, [ts, value], key=lambda reading: reading[0])
    newest = readings[-1][0]
    cut = bisect_left(readings, [newest - keep_ms]) - 1  # keep the newest reading before the window
    if cut > 0:
        del readings[:cut]
