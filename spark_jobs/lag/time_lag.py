"""Time lag from a partition's log-end history, the ETA from its rates, and the committed record's age.

Time lag (kafka-lag-exporter's method): the moment the log-end offset reached the committed
offset is interpolated linearly between the last history point at or below it and the next
point above it; time lag = observation time − that moment. Caught up (lag 0) is 0 s
(`caught_up`). With too few points, or a committed offset older than the oldest point kept,
there is no interpolation, but there is a floor: the record at the committed offset existed
no later than the oldest evidence of it (the consumer committed it, or a log-end reading was
at or above it), so the time lag is at least that evidence's age (`commit_age_lower_bound`,
and the note says so). A stopped consumer, whose commit is older than the history, so shows
"≥ 3m26s" rather than nothing. Only without any older evidence (the very first observation)
is it NULL with method `unknown` and a note why — never a made-up number, never NaN or inf.
(No extrapolation from the produce rate: a guess would look like a measurement.)
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from lagwatch.lake import TimeLagMethod
from spark_jobs.lag import reasons
from spark_jobs.lag.retention import RecordAge


@dataclass(frozen=True, slots=True)
class TimeLag:
    seconds: float | None
    method: str  # lagwatch.lake.TimeLagMethod
    note: str = ""  # for the reason: why it is unknown, or that it is a lower bound
    cause: str = ""  # why it was not interpolated


def append_history(history_ts: list[int], history_end: list[int], ts_ms: int, end: int, max_points: int) -> None:
    """Add a log-end point in place, keeping the history non-decreasing and bounded.

    A lower end offset than the last point means the partition was truncated or recreated:
    the old history no longer describes these offsets, so it restarts. A flat run keeps only
    its first and last point (the last is "the end was still here at ts", which is what the
    interpolation needs). Over ``max_points``, every second point of the older half goes:
    the recent past stays exact and the far past gets coarser instead of disappearing.
    """
    if history_ts and ts_ms <= history_ts[-1]:
        return
    if history_end and end < history_end[-1]:
        history_ts.clear()
        history_end.clear()
    if len(history_end) >= 2 and history_end[-1] == history_end[-2] == end:
        history_ts[-1] = ts_ms
        return
    history_ts.append(ts_ms)
    history_end.append(end)
    if len(history_ts) > max_points:
        half = len(history_ts) // 2
        history_ts[:half] = history_ts[:half:2]
        history_end[:half] = history_end[:half:2]


def interpolate_time_lag(
    history_ts: Sequence[int],
    history_end: Sequence[int],
    committed: int,
    lag: int,
    now_ms: int,
    min_points: int,
) -> TimeLag:
    """Seconds since the log-end offset reached the committed offset (see module docstring)."""
    if lag <= 0:
        return TimeLag(0.0, TimeLagMethod.CAUGHT_UP)
    points = len(history_ts)
    if points < min_points:
        return _unknown(reasons.time_lag_too_few_points(points, min_points))
    below = bisect_right(history_end, committed) - 1
    if below < 0:
        return _unknown(reasons.time_lag_older_than_history(committed, history_end[0], history_ts[0]))
    if below == points - 1:
        return _unknown(reasons.time_lag_history_ends(history_end[-1], committed))
    t0, e0 = history_ts[below], history_end[below]
    t1, e1 = history_ts[below + 1], history_end[below + 1]
    reached_ms = t0 + (committed - e0) * (t1 - t0) / (e1 - e0)
    seconds = max(0.0, (now_ms - reached_ms) / 1000.0)
    if not math.isfinite(seconds):  # defensive: offsets beyond float range
        return _unknown(reasons.time_lag_out_of_range())
    return TimeLag(seconds, TimeLagMethod.INTERPOLATED)


def _unknown(why: str) -> TimeLag:
    return TimeLag(None, TimeLagMethod.UNKNOWN, reasons.time_lag_unknown(why), why)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a partition's state knows about when offsets existed, for the lower bound."""

    history_ts: Sequence[int]
    history_end: Sequence[int]  # non-decreasing (append_history)
    commit_ts: Sequence[int]  # the commit log's commits in time order (empty without it)
    commit_offset: Sequence[int]
    #: The first observation showing the current committed offset: it was committed by then.
    committed_since_ms: int


def produced_by_ms(evidence: Evidence, committed: int, now_ms: int) -> int:
    """The oldest moment the record at `committed` is known to have existed (≤ now_ms).

    A consumer commits offset C only after reading record C − 1, and a log end at or above C
    means C was produced: each such reading is a moment by which the log end had passed C.
    """
    oldest = min(evidence.committed_since_ms, now_ms)
    first_above = bisect_left(evidence.history_end, committed)
    if first_above < len(evidence.history_ts):
        oldest = min(oldest, evidence.history_ts[first_above])
    for ts, offset in zip(evidence.commit_ts, evidence.commit_offset, strict=True):
        if ts >= oldest:
            break
        if offset >= committed:
            oldest = ts
            break
    return oldest


def with_lower_bound(time_lag: TimeLag, evidence: Evidence, committed: int, now_ms: int) -> TimeLag:
    """An unknown time lag replaced by its floor, the age of the oldest evidence (unchanged
    when there is none older than now: then it stays unknown)."""
    if time_lag.method != TimeLagMethod.UNKNOWN:
        return time_lag
    since_ms = produced_by_ms(evidence, committed, now_ms)
    if since_ms >= now_ms:
        return time_lag
    seconds = (now_ms - since_ms) / 1000.0
    note = reasons.time_lag_lower_bound(seconds, committed, since_ms, time_lag.cause)
    return TimeLag(seconds, TimeLagMethod.LOWER_BOUND, note, time_lag.cause)


def rate(first: int, last: int, span_ms: int) -> float | None:
    """Offsets per second; None without a time span or when offsets went back (no meaningful rate)."""
    if span_ms <= 0 or last < first:
        return None
    return (last - first) * 1000.0 / span_ms


def committed_record_age(
    history_ts: Sequence[int],
    history_end: Sequence[int],
    committed: int,
    lag: int,
    now_ms: int,
    interpolated: TimeLag | None = None,
) -> RecordAge | None:
    """How old the record at the committed offset is, from the log-end history: the moment the log
    end passed the committed offset is when that record was appended (interpolated from any two
    points, however few the history has). A committed offset older than the history is at least
    as old as the history's oldest point; None when the history cannot tell (no point above it).
    ``interpolated``: the time lag already interpolated from the same history, reused when it
    found a time (a stricter minimum of points only ever withholds one)."""
    if lag <= 0:
        return RecordAge(0.0)
    found = interpolated
    if found is None or found.seconds is None:
        found = interpolate_time_lag(history_ts, history_end, committed, lag, now_ms, min_points=2)
    if found.seconds is not None:
        return RecordAge(found.seconds)
    if history_end and committed < history_end[0]:
        return RecordAge(max(0.0, (now_ms - history_ts[0]) / 1000.0), at_least=True)
    return None


def eta_seconds(lag: int, consume_rate: float | None, produce_rate: float | None) -> float | None:
    """Time to catch up at the current rates: lag / (consume - produce).

    None means "not catching up" (the consumer is not gaining, or there are no rates yet): it
    must stay None all the way to the reader, never 0 nor an older window's value.
    """
    if lag <= 0:
        return 0.0
    if consume_rate is None or produce_rate is None or consume_rate <= produce_rate:
        return None
    return lag / (consume_rate - produce_rate)
