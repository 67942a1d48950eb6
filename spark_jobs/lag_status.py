"""Consumer-lag judgement for one group-partition, in plain Python (no Spark needed to test it).

The streaming job (`spark_jobs/lag.py`) feeds each (cluster, group, topic, partition) its
observations in time order — one per collector cycle: the committed offset and the lag the
collector measured in the same cycle (docs/admin-collector.md), so the log-end offset at that moment is
``committed + lag``. A :class:`PartitionTracker` keeps, per partition of a group:

- the log-end history ``(ts, end)``, bounded (``history_points``) by thinning the older half,
  and compressed (a flat run keeps only its first and last point), so time lag can be
  interpolated far back without unbounded state;
- the sliding commit window ``(ts, committed, lag)`` spanning ``window_s`` (Burrow's window);
- when the committed offset last changed, and the current 1-minute window's running lag max;
- where the cluster's commit log is read, the commits themselves ``(commit ts, offset)`` over
  the same window (the newest one is always kept): every commit, not one per cycle.

Time lag (kafka-lag-exporter's method): the moment the log-end offset reached the committed
offset is interpolated linearly between the last history point at or below it and the next
point above it; time lag = observation time − that moment. Caught up (lag 0) is 0 s
(`caught_up`); with too few points, or a committed offset older than the oldest point kept,
it is NULL with method `unknown` and the reason says why — never a made-up number, never
NaN or inf. (No extrapolation from the produce rate: a guess would look like a measurement.)

Status (Burrow's rules over the commit window; the first rule that matches wins). Rules 1, 4
and 6 apply to a partition with commits from the commit log, rules 5 and 7 to one without
(OffsetFetch only), the others to both. A consumer owes a commit only once there is something
to read: rules 4–7 count from the later of the last commit (or offset change) and the last
observation with lag 0, so a group caught up on a quiet topic stays OK however long it has not
committed, and is not STOP the moment a record lands after hours of silence:

0. the committed offset is below the partition's newest log start → LOSS (`loss`): "LOSS: 150
   records deleted unread (committed offset 30 < log start 180)"; nothing else matters then.
1. a commit went back below the commit before it, within the window → REWIND (`rewind`), even
   when caught up now: those records were read twice, however short-lived the rewind was.
2. lag 0 at the newest observation → OK (`caught_up`).
3. the committed offset went back between two observations in the window → REWIND (`rewind`).
4. lag > 0 and no commit for longer than ``stop_after_s`` (default: the window, ``window_s``)
   → STOP (`stop`): "STOP: no commit for 12m > window 10m (last commit at 10:02:03, …)".
5. lag > 0 and the committed offset has not changed for longer than ``stop_after_s`` → STOP
   (`stop`).
6. lag > 0, at least ``min_window_points`` commits in the window, all of the same offset, and
   the newest no older than the longest gap between them (commits keep arriving) → STALL
   (`stall`). A consumer that stopped committing is never STALL on its way to STOP.
7. lag > 0 and the committed offset is the same at every observation of the window, with at
   least ``min_window_points`` observations → STALL (`stall`). Without commit timestamps
   the difference to STOP is duration: not moving for a whole window is STALL, not moving for
   longer than ``stop_after_s`` is STOP.
8. lag never fell during the window, rose overall, over ≥ ``min_window_points`` observations,
   → WARN (`lag_rising`).
9. per-group thresholds (``[lag.group_thresholds]``): lag > ``warn_lag`` → WARN (`warn_lag`);
   time lag > ``warn_time_lag_s`` → WARN (`warn_time_lag_s`).
10. otherwise OK (`ok`).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lagwatch.config import LagConfig
from lagwatch.vocabulary import STATUS_SEVERITY

#: A partition's commits from the commit log: (commit timestamps, offsets), in time order.
Commits = tuple[Sequence[int], Sequence[int]]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The knobs one group is judged by: LagConfig defaults merged with its group_thresholds."""

    window_s: float
    stop_after_s: float
    stop_after_name: str  # how the reason names the STOP limit: "window" or "stop_after_s"
    min_window_points: int
    min_history_points: int
    history_points: int
    warn_lag: float | None = None
    warn_time_lag_s: float | None = None

    @classmethod
    def for_group(cls, config: LagConfig, group_id: str) -> Thresholds:
        overrides = config.group_thresholds.get(group_id, {})
        stop_after = overrides.get("stop_after_s")
        return cls(
            window_s=config.window_s,
            stop_after_s=config.window_s if stop_after is None else stop_after,
            stop_after_name="window" if stop_after is None else "stop_after_s",
            min_window_points=config.min_window_points,
            min_history_points=config.min_history_points,
            history_points=config.history_points,
            warn_lag=overrides.get("warn_lag"),
            warn_time_lag_s=overrides.get("warn_time_lag_s"),
        )


@dataclass(frozen=True, slots=True)
class TimeLag:
    seconds: float | None
    method: str  # caught_up | interpolated | unknown
    note: str = ""  # why it is unknown


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    rule: str
    reason: str


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One lag_1m row's measured values for the newest observation of a partition."""

    ts_ms: int
    committed_offset: int
    end_offset: int
    lag: int
    lag_max: int
    consume_rate: float | None
    produce_rate: float | None
    time_lag_s: float | None
    time_lag_method: str
    eta_s: float | None
    #: Seconds between the window's oldest and newest observation: the span the consume and
    #: produce rates (and so the ETA) are measured over; 0 with a single observation.
    rate_span_s: float
    #: Records between the partition's log start and the committed offset (negative: deleted
    #: unread), and those records at the produce rate in seconds; None without a log start.
    retention_margin: int | None
    retention_margin_s: float | None
    status: str
    rule: str
    reason: str


def format_duration(seconds: float) -> str:
    """12m, 45s, 2m30s, 1h05m: short enough for a reason string, exact enough for a human."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m" if secs == 0 else f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def _clock(ts_ms: int) -> str:
    """UTC time of day, HH:MM:SS (arithmetic, not strftime: this runs for many rows per batch)."""
    minutes, seconds = divmod(ts_ms // 1000 % 86_400, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def _number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


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
        return TimeLag(0.0, "caught_up")
    points = len(history_ts)
    if points < min_points:
        return TimeLag(None, "unknown", f"time lag unknown: {points} log-end point(s), need {min_points}")
    below = bisect_right(history_end, committed) - 1
    if below < 0:
        return TimeLag(
            None,
            "unknown",
            f"time lag unknown: committed offset {committed} is older than the log-end history "
            f"(oldest point {history_end[0]} at {_clock(history_ts[0])})",
        )
    if below == points - 1:
        return TimeLag(
            None,
            "unknown",
            f"time lag unknown: log-end history ends at {history_end[-1]}, not above committed offset {committed}",
        )
    t0, e0 = history_ts[below], history_end[below]
    t1, e1 = history_ts[below + 1], history_end[below + 1]
    reached_ms = t0 + (committed - e0) * (t1 - t0) / (e1 - e0)
    seconds = max(0.0, (now_ms - reached_ms) / 1000.0)
    if not math.isfinite(seconds):  # defensive: offsets beyond float range
        return TimeLag(None, "unknown", "time lag unknown: offsets out of range")
    return TimeLag(seconds, "interpolated")


def _rate(first: int, last: int, span_ms: int) -> float | None:
    """Offsets per second; None without a time span or when offsets went back (no meaningful rate)."""
    if span_ms <= 0 or last < first:
        return None
    return (last - first) * 1000.0 / span_ms


def judge(
    window_ts: Sequence[int],
    window_committed: Sequence[int],
    window_lag: Sequence[int],
    committed_since_ms: int,
    time_lag_s: float | None,
    thresholds: Thresholds,
    commits: Commits = ((), ()),
    caught_up_ms: int = -1,
    log_start: int | None = None,
) -> Verdict:
    """Burrow's rules plus per-group thresholds over one partition's commit window (module docstring).

    ``commits`` are the commit log's (commit ts, offset) lists in time order, empty without it;
    ``caught_up_ms`` is the newest observation with lag 0 (-1: none), where rules 4–7 start counting;
    ``log_start`` the partition's newest log start offset (None: not read).
    """
    now_ms, committed, lag = window_ts[-1], window_committed[-1], window_lag[-1]
    if log_start is not None and committed < log_start:
        return Verdict(
            "LOSS",
            "loss",
            f"LOSS: {log_start - committed} records deleted unread (committed offset {committed} "
            f"< log start {log_start})",
        )
    commit_ts, commit_offset = commits
    back = _went_back(commit_offset)
    if back:
        return Verdict(
            "REWIND",
            "rewind",
            f"REWIND: a commit went back from {commit_offset[back - 1]} to {commit_offset[back]} "
            f"at {_clock(commit_ts[back])}",
        )
    if lag <= 0:
        return Verdict("OK", "caught_up", "OK: caught up (lag 0)")
    back = _went_back(window_committed)
    if back:
        return Verdict(
            "REWIND",
            "rewind",
            f"REWIND: committed offset went back from {window_committed[back - 1]} to {window_committed[back]} "
            f"at {_clock(window_ts[back])}",
        )
    points = len(window_ts)
    verdict = (
        _judge_commits(now_ms, lag, commit_ts, commit_offset, thresholds, caught_up_ms)
        if commit_ts
        else _judge_unchanged(
            now_ms, committed, lag, window_ts, window_committed[0], committed_since_ms, thresholds, caught_up_ms
        )
    )
    if verdict is not None:
        return verdict
    if (
        points >= thresholds.min_window_points
        and lag > window_lag[0]
        and all(window_lag[i] >= window_lag[i - 1] for i in range(1, points))
    ):
        return Verdict(
            "WARN",
            "lag_rising",
            f"WARN: lag rising from {window_lag[0]} to {lag} over {format_duration((now_ms - window_ts[0]) / 1000)} "
            f"({points} observations)",
        )
    if thresholds.warn_lag is not None and lag > thresholds.warn_lag:
        return Verdict("WARN", "warn_lag", f"WARN: lag {lag} > warn_lag {_number(thresholds.warn_lag)}")
    if thresholds.warn_time_lag_s is not None and time_lag_s is not None and time_lag_s > thresholds.warn_time_lag_s:
        return Verdict(
            "WARN",
            "warn_time_lag_s",
            f"WARN: time lag {format_duration(time_lag_s)} > "
            f"warn_time_lag_s {format_duration(thresholds.warn_time_lag_s)}",
        )
    return Verdict("OK", "ok", f"OK: lag {lag}, no rule matched")


def _went_back(offsets: Sequence[int]) -> int:
    """Index of the newest offset lower than the one before it; 0 when none went back."""
    for i in range(len(offsets) - 1, 0, -1):
        if offsets[i] < offsets[i - 1]:
            return i
    return 0


def _judge_unchanged(
    now_ms: int,
    committed: int,
    lag: int,
    window_ts: Sequence[int],
    first_committed: int,
    committed_since_ms: int,
    thresholds: Thresholds,
    caught_up_ms: int,
) -> Verdict | None:
    """Rules 5 and 7 (STOP, STALL by how long the offset stood still) for a partition with lag > 0."""
    unchanged_s = (now_ms - max(committed_since_ms, caught_up_ms)) / 1000.0
    points = len(window_ts) - bisect_right(window_ts, caught_up_ms)  # observations with lag since caught up
    if unchanged_s > thresholds.stop_after_s:
        return Verdict(
            "STOP",
            "stop",
            f"STOP: no commit for {format_duration(unchanged_s)}{_since_caught_up(committed_since_ms, caught_up_ms)} "
            f"> {thresholds.stop_after_name} {format_duration(thresholds.stop_after_s)} "
            f"(committed offset {committed}, lag {lag})",
        )
    if points >= thresholds.min_window_points and first_committed == committed:
        return Verdict(
            "STALL",
            "stall",
            f"STALL: committed offset {committed} not moving for {format_duration(unchanged_s)} "
            f"({points} observations) while lag is {lag}",
        )
    return None


def _since_caught_up(last_commit_ms: int, caught_up_ms: int) -> str:
    """The reason's note when the silence is counted from the last caught-up observation."""
    return f" since lag appeared (caught up at {_clock(caught_up_ms)})" if caught_up_ms > last_commit_ms else ""


def _judge_commits(
    now_ms: int,
    lag: int,
    commit_ts: Sequence[int],
    commit_offset: Sequence[int],
    thresholds: Thresholds,
    caught_up_ms: int,
) -> Verdict | None:
    """Rules 4 and 6 (STOP, STALL from commit timestamps) for a partition with lag > 0."""
    silent_s = (now_ms - max(commit_ts[-1], caught_up_ms)) / 1000.0
    if silent_s > thresholds.stop_after_s:
        return Verdict(
            "STOP",
            "stop",
            f"STOP: no commit for {format_duration(silent_s)}{_since_caught_up(commit_ts[-1], caught_up_ms)} "
            f"> {thresholds.stop_after_name} "
            f"{format_duration(thresholds.stop_after_s)} (last commit at {_clock(commit_ts[-1])}, "
            f"committed offset {commit_offset[-1]}, lag {lag})",
        )
    after = bisect_right(commit_ts, caught_up_ms)  # commits made while there was something to read
    commit_ts, commit_offset = commit_ts[after:], commit_offset[after:]
    count = len(commit_ts)
    if count >= thresholds.min_window_points and all(offset == commit_offset[-1] for offset in commit_offset):
        longest_gap_ms = max(commit_ts[i] - commit_ts[i - 1] for i in range(1, count))
        if now_ms - commit_ts[-1] <= longest_gap_ms:
            return Verdict(
                "STALL",
                "stall",
                f"STALL: {count} commits of offset {commit_offset[-1]} in "
                f"{format_duration((commit_ts[-1] - commit_ts[0]) / 1000)} while lag is {lag}",
            )
    return None


#: Halves of observations a partition keeps waiting for their partner (a few cycles' worth).
MAX_WAITING_HALVES = 8


@dataclass(slots=True)
class PartitionTracker:
    """Streaming state of one group-partition; pickled into the Spark state store."""

    history_ts: list[int] = field(default_factory=list)
    history_end: list[int] = field(default_factory=list)
    window_ts: list[int] = field(default_factory=list)
    window_committed: list[int] = field(default_factory=list)
    window_lag: list[int] = field(default_factory=list)
    committed_since_ms: int = 0
    period_start_ms: int = -1
    period_lag_max: int = 0
    commit_ts: list[int] = field(default_factory=list)
    commit_offset: list[int] = field(default_factory=list)
    #: The newest observation with lag 0 (-1: none yet): a commit is owed only after it.
    caught_up_ms: int = -1
    #: Halves of a cycle's observation whose partner is in a later micro-batch:
    #: (ts, is_lag, value), at most MAX_WAITING_HALVES, none older than the lag window.
    waiting_halves: list[tuple[int, bool, float]] = field(default_factory=list)
    #: The newest log start offset read for the partition, and when (-1: none yet).
    log_start_ts_ms: int = -1
    log_start_offset: int = -1

    def to_state(self) -> tuple[Any, ...]:
        """Plain tuple for pickling: C-speed, unlike a slots dataclass's Python-level __setstate__."""
        return (
            self.history_ts,
            self.history_end,
            self.window_ts,
            self.window_committed,
            self.window_lag,
            self.committed_since_ms,
            self.period_start_ms,
            self.period_lag_max,
            self.commit_ts,
            self.commit_offset,
            self.caught_up_ms,
            self.waiting_halves,
            self.log_start_ts_ms,
            self.log_start_offset,
        )

    @classmethod
    def from_state(cls, saved: tuple[Any, ...]) -> PartitionTracker:
        return cls(*saved)  # state saved before commits (or caught_up_ms) were tracked: defaults

    @property
    def last_seen_ms(self) -> int:
        """Newest observation or commit: what keeps the partition in the state."""
        waiting = max((half[0] for half in self.waiting_halves), default=-1)
        return max(self.last_ts_ms, self.commit_ts[-1] if self.commit_ts else -1, waiting)

    def see_log_start(self, ts_ms: int, offset: int) -> None:
        """Keep the newest log start offset (older readings, read late, are ignored)."""
        if ts_ms > self.log_start_ts_ms:
            self.log_start_ts_ms, self.log_start_offset = ts_ms, offset

    def take_half(self, ts_ms: int, is_lag: bool) -> float | None:
        """The waiting half of kind `is_lag` from the cycle at ts_ms (removed), or None."""
        for i, (waiting_ts, waiting_is_lag, value) in enumerate(self.waiting_halves):
            if waiting_ts == ts_ms and waiting_is_lag == is_lag:
                del self.waiting_halves[i]
                return value
        return None

    def wait_half(self, ts_ms: int, is_lag: bool, value: float, keep_ms: int) -> None:
        """Keep a half until its partner arrives (bounded: newest MAX_WAITING_HALVES within keep_ms)."""
        if ts_ms <= self.last_ts_ms:  # that cycle is observed already, or too late to observe
            return
        kept = [half for half in self.waiting_halves if half[0] > ts_ms - keep_ms and half[:2] != (ts_ms, is_lag)]
        self.waiting_halves = sorted([*kept, (ts_ms, is_lag, value)])[-MAX_WAITING_HALVES:]

    def commit(self, ts_ms: int, offset: int, thresholds: Thresholds) -> bool:
        """Take one commit from the commit log, in or out of time order; False for a duplicate
        (a commit read twice) or one older than the window."""
        oldest_ms = self.last_seen_ms - int(thresholds.window_s * 1000)
        if ts_ms <= oldest_ms:
            return False
        at = bisect_right(self.commit_ts, ts_ms)
        if at > 0 and self.commit_ts[at - 1] == ts_ms and self.commit_offset[at - 1] == offset:
            return False
        self.commit_ts.insert(at, ts_ms)
        self.commit_offset.insert(at, offset)
        self._trim_commits(self.last_seen_ms - int(thresholds.window_s * 1000))
        return True

    def _trim_commits(self, oldest_ms: int) -> None:
        keep_from = min(bisect_right(self.commit_ts, oldest_ms), len(self.commit_ts) - 1)  # keep the newest
        if keep_from > 0:
            del self.commit_ts[:keep_from], self.commit_offset[:keep_from]

    @property
    def last_ts_ms(self) -> int:
        return self.window_ts[-1] if self.window_ts else -1

    def observe(self, ts_ms: int, committed: int, lag: int, thresholds: Thresholds, period_ms: int) -> bool:
        """Take one observation; False (and no change) for a duplicate or out-of-order one."""
        if ts_ms <= self.last_ts_ms:
            return False
        if not self.window_committed or committed != self.window_committed[-1]:
            self.committed_since_ms = ts_ms
        if lag <= 0:
            self.caught_up_ms = ts_ms
        period_start = ts_ms - ts_ms % period_ms
        if period_start != self.period_start_ms:
            self.period_start_ms, self.period_lag_max = period_start, lag
        else:
            self.period_lag_max = max(self.period_lag_max, lag)
        append_history(self.history_ts, self.history_end, ts_ms, committed + lag, thresholds.history_points)
        self.window_ts.append(ts_ms)
        self.window_committed.append(committed)
        self.window_lag.append(lag)
        self._trim_window(ts_ms - int(thresholds.window_s * 1000))
        if self.commit_ts:
            self._trim_commits(ts_ms - int(thresholds.window_s * 1000))
        return True

    def _trim_window(self, oldest_ms: int) -> None:
        keep_from = bisect_right(self.window_ts, oldest_ms)
        if keep_from >= len(self.window_ts):  # never drop the newest observation
            keep_from = len(self.window_ts) - 1
        if keep_from > 0:
            del self.window_ts[:keep_from], self.window_committed[:keep_from], self.window_lag[:keep_from]

    def report(self, thresholds: Thresholds) -> PartitionReport:
        """The lag_1m values as of the newest observation."""
        now_ms, committed, lag = self.window_ts[-1], self.window_committed[-1], self.window_lag[-1]
        span_ms = now_ms - self.window_ts[0]
        consume_rate = _rate(self.window_committed[0], committed, span_ms)
        produce_rate = _rate(self.window_committed[0] + self.window_lag[0], committed + lag, span_ms)
        time_lag = interpolate_time_lag(
            self.history_ts, self.history_end, committed, lag, now_ms, thresholds.min_history_points
        )
        log_start = self.log_start_offset if self.log_start_ts_ms >= 0 else None
        verdict = judge(
            self.window_ts,
            self.window_committed,
            self.window_lag,
            self.committed_since_ms,
            time_lag.seconds,
            thresholds,
            (self.commit_ts, self.commit_offset),
            self.caught_up_ms,
            log_start,
        )
        margin = None if log_start is None else committed - log_start
        return PartitionReport(
            ts_ms=now_ms,
            committed_offset=committed,
            end_offset=committed + lag,
            lag=lag,
            lag_max=self.period_lag_max,
            consume_rate=consume_rate,
            produce_rate=produce_rate,
            time_lag_s=time_lag.seconds,
            time_lag_method=time_lag.method,
            eta_s=eta_seconds(lag, consume_rate, produce_rate),
            rate_span_s=span_ms / 1000.0,
            retention_margin=margin,
            retention_margin_s=retention_seconds(margin, produce_rate),
            status=verdict.status,
            rule=verdict.rule,
            reason=f"{verdict.reason}; {time_lag.note}" if time_lag.note else verdict.reason,
        )


def retention_seconds(margin: int | None, produce_rate: float | None) -> float | None:
    """Seconds until retention reaches the committed offset, if the log start moves at the produce
    rate (retention deletes about what is produced); 0 once passed, None without a rate."""
    if margin is None:
        return None
    if margin <= 0:
        return 0.0
    if produce_rate is None or produce_rate <= 0:
        return None
    return margin / produce_rate


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


@dataclass(frozen=True, slots=True)
class GroupSummary:
    status: str
    rule: str
    reason: str
    total_lag: int
    max_lag: int
    max_time_lag_s: float | None
    partitions: int
    topics: str


def summarize_group(partitions: Iterable[tuple[str, int, PartitionReport]]) -> GroupSummary:
    """A group's status is its worst partition's, with that partition named in the reason."""
    rows = sorted(partitions, key=lambda item: (item[0], item[1]))
    if not rows:
        raise ValueError("summarize_group needs at least one partition report")
    worst_topic, worst_partition, worst = max(rows, key=lambda item: STATUS_SEVERITY.get(item[2].status, 0))
    not_ok = sum(1 for _, _, report in rows if report.status != "OK")
    time_lags = [report.time_lag_s for _, _, report in rows if report.time_lag_s is not None]
    reason = f"{worst.reason} [{worst_topic}/{worst_partition}]"
    if not_ok:
        reason += f"; {not_ok} of {len(rows)} partitions not OK"
    return GroupSummary(
        status=worst.status,
        rule=worst.rule,
        reason=reason,
        total_lag=sum(report.lag for _, _, report in rows),
        max_lag=max(report.lag for _, _, report in rows),
        max_time_lag_s=max(time_lags) if time_lags else None,
        partitions=len(rows),
        topics=",".join(sorted({topic for topic, _, _ in rows})),
    )
