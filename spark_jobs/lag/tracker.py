"""One group-partition's streaming state (:class:`PartitionTracker`) and the lag_1m values it reports.

The step (``step.py``) feeds each (cluster, group, topic, partition) its observations in time
order — one per collector cycle: the committed offset and the lag the collector measured in
the same cycle (docs/admin-collector.md), so the log-end offset at that moment is
``committed + lag``. A tracker keeps, per partition of a group:

- the log-end history ``(ts, end)``, bounded and compressed (``time_lag.append_history``), so
  time lag can be interpolated far back without unbounded state;
- the sliding commit window ``(ts, committed, lag)`` spanning ``window_s`` (Burrow's window);
- when the committed offset last changed, and the current 1-minute window's running lag max;
- where the cluster's commit log is read, the commits themselves ``(commit ts, offset)`` over
  the same window (the newest one is always kept): every commit, not one per cycle.

Its report is judged by the rules (``rules.py``) with the cycle's membership as evidence.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, fields
from typing import Any

from spark_jobs.lag import reasons
from spark_jobs.lag.retention import PartitionFacts, TopicLimits, margin
from spark_jobs.lag.rules import Membership, Thresholds, judge
from spark_jobs.lag.time_lag import (
    Evidence,
    append_history,
    committed_record_age,
    eta_seconds,
    interpolate_time_lag,
    rate,
    with_lower_bound,
)


@dataclass(frozen=True, slots=True)
class PartitionReport:
    """One lag_1m row's measured values for the newest observation of a partition.

    Every field but ``ts_ms`` is the lag_1m column of the same name (:data:`REPORT_COLUMNS`):
    the step writes them by name, so a column measured per partition is a field here, set in
    :meth:`PartitionTracker.report`, and its declaration in ``lagwatch.lake.TABLES``. New fields
    go last, with a default, since reports are also built positionally.
    """

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
    #: unread); None without a log start.
    retention_margin: int | None
    #: Seconds until the topic's nearer retention limit deletes the committed offset (None: no
    #: margin), and after the verdict which limit (time | size) and why (spark_jobs/lag/retention.py).
    retention_margin_s: float | None
    status: str
    rule: str
    reason: str
    retention_limit: str | None = None
    retention_reason: str = ""


#: The PartitionReport fields that are lag_1m columns, in field order: all but ts_ms, which
#: places the row in its window instead.
REPORT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(PartitionReport) if f.name != "ts_ms")

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
    #: The newest size on disk read for the partition (bytes), and when (-1: none yet). Last in
    #: the state tuple: a state saved before sizes were read decodes with these defaults.
    size_ts_ms: int = -1
    size_bytes: int = -1

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
            self.size_ts_ms,
            self.size_bytes,
        )

    @classmethod
    def from_state(cls, saved: tuple[Any, ...]) -> PartitionTracker:
        return cls(*saved)  # state saved before commits (caught_up_ms, sizes) were tracked: defaults

    @property
    def last_seen_ms(self) -> int:
        """Newest observation or commit: what keeps the partition in the state."""
        newest = self.window_ts[-1] if self.window_ts else -1
        if self.commit_ts and self.commit_ts[-1] > newest:
            newest = self.commit_ts[-1]
        if self.waiting_halves and self.waiting_halves[-1][0] > newest:  # kept in time order
            newest = self.waiting_halves[-1][0]
        return newest

    def see_log_start(self, ts_ms: int, offset: int) -> None:
        """Keep the newest log start offset (older readings, read late, are ignored)."""
        if ts_ms > self.log_start_ts_ms:
            self.log_start_ts_ms, self.log_start_offset = ts_ms, offset

    def see_size(self, ts_ms: int, size_bytes: int) -> None:
        """Keep the newest size on disk (older readings, read late, are ignored)."""
        if ts_ms > self.size_ts_ms:
            self.size_ts_ms, self.size_bytes = ts_ms, size_bytes

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
        oldest_ms = self.last_seen_ms - thresholds.window_ms
        if ts_ms <= oldest_ms:
            return False
        at = bisect_right(self.commit_ts, ts_ms)
        if at > 0 and self.commit_ts[at - 1] == ts_ms and self.commit_offset[at - 1] == offset:
            return False
        self.commit_ts.insert(at, ts_ms)
        self.commit_offset.insert(at, offset)
        self._trim_commits(max(oldest_ms, ts_ms - thresholds.window_ms))  # as of the newest thing seen now
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
        self._trim_window(ts_ms - thresholds.window_ms)
        if self.commit_ts:
            self._trim_commits(ts_ms - thresholds.window_ms)
        return True

    def _trim_window(self, oldest_ms: int) -> None:
        keep_from = bisect_right(self.window_ts, oldest_ms)
        if keep_from >= len(self.window_ts):  # never drop the newest observation
            keep_from = len(self.window_ts) - 1
        if keep_from > 0:
            del self.window_ts[:keep_from], self.window_committed[:keep_from], self.window_lag[:keep_from]

    def report(
        self, thresholds: Thresholds, membership: Membership | None = None, limits: TopicLimits | None = None
    ) -> PartitionReport:
        """The lag_1m values as of the newest observation (``membership``: its cycle's reading;
        ``limits``: the topic's retention settings, for the retention margin)."""
        now_ms, committed, lag = self.window_ts[-1], self.window_committed[-1], self.window_lag[-1]
        span_ms = now_ms - self.window_ts[0]
        consume_rate = rate(self.window_committed[0], committed, span_ms)
        produce_rate = rate(self.window_committed[0] + self.window_lag[0], committed + lag, span_ms)
        interpolated = interpolate_time_lag(
            self.history_ts, self.history_end, committed, lag, now_ms, thresholds.min_history_points
        )
        evidence = Evidence(
            self.history_ts, self.history_end, self.commit_ts, self.commit_offset, self.committed_since_ms
        )
        time_lag = with_lower_bound(interpolated, evidence, committed, now_ms)
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
            membership,
        )
        records_margin = None if log_start is None else committed - log_start
        age = committed_record_age(self.history_ts, self.history_end, committed, lag, now_ms, interpolated)
        size = self.size_bytes if self.size_ts_ms >= 0 else None
        retention = margin(limits, PartitionFacts(committed, lag, log_start, produce_rate, age, size))
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
            retention_margin=records_margin,
            retention_margin_s=retention.seconds,
            retention_limit=retention.limit,
            retention_reason=retention.reason,
            status=verdict.status,
            rule=verdict.rule,
            reason=reasons.partition(verdict.reason, time_lag.note),
        )
