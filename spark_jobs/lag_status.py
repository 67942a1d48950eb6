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

Status (Burrow's rules over the commit window, with the group's membership as evidence; the
first rule that matches wins). A consumer owes a commit only once there is something to read:
the time rules count from the later of the last commit (or offset change) and the last
observation with lag 0, so a group caught up on a quiet topic stays OK however long it has not
committed, and is not STOP the moment a record lands after hours of silence.

Membership (:class:`Membership`) is what the group coordinator said in the observation's own
collector cycle: whether the group had members, for how many cycles in a row it had none, and
who owned the partition. Without a reading for that cycle (tansu describes no members, or the
describe did not answer) the membership rules are skipped and a STOP or STALL reason says it
was judged by time alone.

0. the committed offset is below the partition's newest log start → LOSS (`loss`): "LOSS: 150
   records deleted unread (committed offset 30 < log start 180)"; nothing else matters then.
1. a commit went back below the commit before it, within the window → REWIND (`rewind`), even
   when caught up now: those records were read twice, however short-lived the rewind was.
2. lag 0 at the newest observation → OK (`caught_up`).
3. the committed offset went back between two observations in the window → REWIND (`rewind`).
4. lag > 0, the group had no members at the newest ``empty_cycles`` cycles, and no commit since
   the first of them → STOP (`stop_empty`): nobody is left to read, so there is no need to wait
   out a silence.
5. lag > 0 and silent for longer than ``stop_after_s`` or twice the partition's usual commit gap
   in the window, whichever is longer → STOP (`stop`). Silent means no commit (commit log), or
   the committed offset unchanged (OffsetFetch only). A member that still owns the partition
   does not prevent it: a killed consumer stays a member until its session times out, and one
   that holds its partitions without committing is not consuming either; the reason names it.
6. lag > 0, a member owns the partition in this cycle, and the committed offset is the same at
   the newest ``stall_cycles`` observations (and at least twice as many as its longest earlier
   standstill in the window) → STALL (`stall_owned`): alive in the group, not moving.
7. lag > 0, at least ``min_window_points`` commits in the window, all of the same offset, and
   the newest no older than the longest gap between them (commits keep arriving) → STALL
   (`stall`). A consumer that stopped committing is never STALL on its way to STOP.
8. lag > 0 and the committed offset is the same at every observation of the window, with at
   least ``min_window_points`` observations (no commit log) → STALL (`stall`).
9. lag never fell over its newest run of observations while it grew by at least
   ``RISING_SHARE`` of the records produced meanwhile, or it never fell and rose overall over a
   window spanning at least half of ``window_s``; ≥ ``min_window_points`` observations either
   way → WARN (`lag_rising`).
10. per-group thresholds (``[lag.group_thresholds]``): lag > ``warn_lag`` → WARN (`warn_lag`);
    time lag > ``warn_time_lag_s`` → WARN (`warn_time_lag_s`).
11. otherwise OK (`ok`).

A group's status is its worst partition's; its reason adds the facts that explain it
(:func:`summarize_group`): the member and host owning that partition, how many partitions are
not OK, a hot partition holding most of the group's lag, and the rebalances in the window.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
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
    min_window_points: int
    min_history_points: int
    history_points: int
    empty_cycles: int
    stall_cycles: int
    warn_lag: float | None = None
    warn_time_lag_s: float | None = None

    @classmethod
    def for_group(cls, config: LagConfig, group_id: str) -> Thresholds:
        overrides = config.group_thresholds.get(group_id, {})
        return cls(
            window_s=config.window_s,
            stop_after_s=overrides.get("stop_after_s", config.stop_after_s),
            min_window_points=config.min_window_points,
            min_history_points=config.min_history_points,
            history_points=config.history_points,
            empty_cycles=config.empty_cycles,
            stall_cycles=config.stall_cycles,
            warn_lag=overrides.get("warn_lag"),
            warn_time_lag_s=overrides.get("warn_time_lag_s"),
        )


@dataclass(frozen=True, slots=True)
class Membership:
    """What the group coordinator said in one collector cycle, as evidence for the judgement."""

    #: Cycles in a row, up to this one, at which the group had no members (0: it has members).
    empty_cycles: int
    #: The first cycle of that run (-1 when the group has members).
    empty_since_ms: int
    #: Who owns the partition in this cycle, "client-1 on /10.0.0.5"; None: no member owns it.
    owner: str | None
    #: False when the cycle read the group's state but not its owners (DescribeGroups off).
    owners_known: bool = True


#: A partition's usual commit gap (or standstill) counts double before its silence is alarming.
USUAL_GAP_FACTOR = 2
#: Lag rising over part of the window is WARN once the consumer fell behind by this share of
#: the records produced meanwhile (consuming at most 75 % of the produce rate).
RISING_SHARE = 0.25


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


def format_clock(ts_ms: int) -> str:
    """UTC time of day, HH:MM:SS (arithmetic, not strftime: this runs for many rows per batch)."""
    minutes, seconds = divmod(ts_ms // 1000 % 86_400, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}"


def format_number(value: float) -> str:
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
            f"(oldest point {history_end[0]} at {format_clock(history_ts[0])})",
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
    membership: Membership | None = None,
) -> Verdict:
    """Burrow's rules with membership as evidence, plus per-group thresholds (module docstring).

    ``commits`` are the commit log's (commit ts, offset) lists in time order, empty without it;
    ``caught_up_ms`` is the newest observation with lag 0 (-1: none), where the time rules start;
    ``log_start`` the partition's newest log start offset (None: not read); ``membership`` the
    coordinator's word in the newest observation's cycle (None: no reading).
    """
    committed, lag = window_committed[-1], window_lag[-1]
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
            f"at {format_clock(commit_ts[back])}",
        )
    if lag <= 0:
        return Verdict("OK", "caught_up", "OK: caught up (lag 0)")
    back = _went_back(window_committed)
    if back:
        return Verdict(
            "REWIND",
            "rewind",
            f"REWIND: committed offset went back from {window_committed[back - 1]} to {window_committed[back]} "
            f"at {format_clock(window_ts[back])}",
        )
    window = _Window(
        window_ts, window_committed, window_lag, committed_since_ms, caught_up_ms, commit_ts, commit_offset
    )
    verdict = (
        _stop_empty(window, thresholds, membership)
        or _stop_silent(window, thresholds, membership)
        or _stall_owned(window, thresholds, membership)
        or (_stall_commits(window, thresholds) if commit_ts else _stall_unchanged(window, thresholds, membership))
    )
    if verdict is not None:
        return verdict
    verdict = _lag_rising(window, thresholds)
    if verdict is not None:
        return verdict
    if thresholds.warn_lag is not None and lag > thresholds.warn_lag:
        return Verdict("WARN", "warn_lag", f"WARN: lag {lag} > warn_lag {format_number(thresholds.warn_lag)}")
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


@dataclass(frozen=True, slots=True)
class _Window:
    """One partition's commit window as the lag > 0 rules read it."""

    ts: Sequence[int]
    committed: Sequence[int]
    lag: Sequence[int]
    committed_since_ms: int
    caught_up_ms: int
    commit_ts: Sequence[int]
    commit_offset: Sequence[int]

    @property
    def now_ms(self) -> int:
        return self.ts[-1]

    @property
    def last_move_ms(self) -> int:
        """The newest commit (commit log), else when the committed offset last changed."""
        return self.commit_ts[-1] if self.commit_ts else self.committed_since_ms

    def silent_s(self) -> float:
        """Seconds without a commit (or offset change) since there was something to read."""
        return (self.now_ms - max(self.last_move_ms, self.caught_up_ms)) / 1000.0

    def usual_gap_s(self) -> float:
        """The longest gap between commits (or offset changes) while there was lag, in the window;
        0 with fewer than two of them. A consumer that commits once a minute is not silent at 40 s."""
        if self.commit_ts:
            stamps = self.commit_ts[bisect_right(self.commit_ts, self.caught_up_ms) :]
        else:
            start = bisect_right(self.ts, self.caught_up_ms)
            moved = range(max(start, 1), len(self.ts))
            stamps = [self.ts[i] for i in moved if self.committed[i] != self.committed[i - 1]]
        return max((b - a for a, b in pairwise(stamps)), default=0) / 1000.0

    def standstills(self) -> tuple[int, int]:
        """(observations at the current committed offset since lag appeared, the longest earlier
        run of one offset in the window that then moved: a lower bound of the usual standstill)."""
        start = bisect_right(self.ts, self.caught_up_ms)
        runs, run = [], 0
        for i in range(start, len(self.ts)):
            if i > start and self.committed[i] != self.committed[i - 1]:
                runs.append(run)
                run = 0
            run += 1
        return run, max(runs, default=0)


def _lag_rising(window: _Window, thresholds: Thresholds) -> Verdict | None:
    """Rule 9: lag never fell over the newest observations while the consumer fell behind by at
    least RISING_SHARE of what was produced (a healthy consumer's lag jitters within its commit
    interval's worth of records, a falling-behind one's grows), or never fell for at least half
    the window (Burrow's rule, for a consumer falling behind slowly)."""
    lag, points = window.lag, len(window.ts)
    start = points - 1
    while start > 0 and lag[start] >= lag[start - 1]:
        start -= 1
    run = points - start
    if run < thresholds.min_window_points or lag[-1] <= lag[start]:
        return None
    produced = (window.committed[-1] + lag[-1]) - (window.committed[start] + lag[start])
    behind = (lag[-1] - lag[start]) / produced if produced > 0 else 0.0
    whole_window = start == 0 and window.now_ms - window.ts[0] >= thresholds.window_s * 500  # half the window
    if behind < RISING_SHARE and not whole_window:
        return None
    share = f", {100 * behind:.0f}% of what was produced" if produced > 0 else ""
    return Verdict(
        "WARN",
        "lag_rising",
        f"WARN: lag rising from {lag[start]} to {lag[-1]} over "
        f"{format_duration((window.now_ms - window.ts[start]) / 1000)} ({run} observations{share})",
    )


def _since_caught_up(last_move_ms: int, caught_up_ms: int) -> str:
    """The reason's note when the silence is counted from the last caught-up observation."""
    return f" since lag appeared (caught up at {format_clock(caught_up_ms)})" if caught_up_ms > last_move_ms else ""


def _evidence(membership: Membership | None) -> str:
    """What a time rule's reason says of membership: it had none, or what it said."""
    if membership is None:
        return ", judged by time: no membership reading"
    if membership.owner is not None:
        return f", while {membership.owner} still owns it"
    return ", no member owns it" if membership.owners_known else ""


def _stop_empty(window: _Window, thresholds: Thresholds, membership: Membership | None) -> Verdict | None:
    """Rule 4: no members for ``empty_cycles`` cycles and no commit since."""
    if membership is None or membership.empty_cycles < thresholds.empty_cycles:
        return None
    committed_since = window.commit_ts[-1] if window.commit_ts else window.committed_since_ms
    if committed_since > membership.empty_since_ms:
        return None  # commits without members: assign()-style consumers, judged by time
    return Verdict(
        "STOP",
        "stop_empty",
        f"STOP: group empty for {membership.empty_cycles} cycles since {format_clock(membership.empty_since_ms)}, "
        f"no commit since (committed offset {window.committed[-1]}, lag {window.lag[-1]})",
    )


def _stop_silent(window: _Window, thresholds: Thresholds, membership: Membership | None) -> Verdict | None:
    """Rule 5: silent for longer than stop_after_s or twice the usual gap."""
    silent_s = window.silent_s()
    usual_s = USUAL_GAP_FACTOR * window.usual_gap_s()
    limit = f"stop_after_s {format_duration(thresholds.stop_after_s)}"
    if usual_s > thresholds.stop_after_s:
        limit = f"{USUAL_GAP_FACTOR} x usual gap {format_duration(usual_s / USUAL_GAP_FACTOR)}"
    if silent_s <= max(thresholds.stop_after_s, usual_s):
        return None
    since = _since_caught_up(window.last_move_ms, window.caught_up_ms)
    if window.commit_ts:
        last = format_clock(window.commit_ts[-1])
        what = f"no commit for {format_duration(silent_s)}{since} > {limit} (last commit at {last}, "
    else:
        what = f"committed offset unchanged for {format_duration(silent_s)}{since} > {limit} ("
    return Verdict(
        "STOP",
        "stop",
        f"STOP: {what}committed offset {window.committed[-1]}, lag {window.lag[-1]}){_evidence(membership)}",
    )


def _stall_owned(window: _Window, thresholds: Thresholds, membership: Membership | None) -> Verdict | None:
    """Rule 6: owned by a member, the offset standing still for stall_cycles (and twice its usual run)."""
    if membership is None or membership.owner is None:
        return None
    run, usual_run = window.standstills()
    if run < max(thresholds.stall_cycles, USUAL_GAP_FACTOR * usual_run):
        return None
    standing_s = (window.now_ms - window.ts[-run]) / 1000.0
    return Verdict(
        "STALL",
        "stall_owned",
        f"STALL: committed offset {window.committed[-1]} unchanged at {run} cycles ({format_duration(standing_s)}) "
        f"while {membership.owner} owns it, lag {window.lag[-1]}",
    )


def _stall_unchanged(window: _Window, thresholds: Thresholds, membership: Membership | None) -> Verdict | None:
    """Rule 8 (no commit log): the same committed offset at every observation of the window."""
    points = len(window.ts) - bisect_right(window.ts, window.caught_up_ms)  # observations with lag since caught up
    if points < thresholds.min_window_points or window.committed[0] != window.committed[-1]:
        return None
    return Verdict(
        "STALL",
        "stall",
        f"STALL: committed offset {window.committed[-1]} not moving for {format_duration(window.silent_s())} "
        f"({points} observations) while lag is {window.lag[-1]}{_evidence(membership)}",
    )


def _stall_commits(window: _Window, thresholds: Thresholds) -> Verdict | None:
    """Rule 7 (commit log): commits keep arriving, all of one offset."""
    after = bisect_right(window.commit_ts, window.caught_up_ms)  # commits made while there was something to read
    commit_ts, commit_offset = window.commit_ts[after:], window.commit_offset[after:]
    count = len(commit_ts)
    if count < thresholds.min_window_points or any(offset != commit_offset[-1] for offset in commit_offset):
        return None
    longest_gap_ms = max(commit_ts[i] - commit_ts[i - 1] for i in range(1, count))
    if window.now_ms - commit_ts[-1] > longest_gap_ms:
        return None
    return Verdict(
        "STALL",
        "stall",
        f"STALL: {count} commits of offset {commit_offset[-1]} in "
        f"{format_duration((commit_ts[-1] - commit_ts[0]) / 1000)} while lag is {window.lag[-1]}",
    )


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

    def report(self, thresholds: Thresholds, membership: Membership | None = None) -> PartitionReport:
        """The lag_1m values as of the newest observation (``membership``: its cycle's reading)."""
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
            membership,
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


#: A partition is hot when its lag is at least HOT_RATIO times the mean of the group's others
#: and at least HOT_MIN_LAG records (a few records of skew explain nothing).
HOT_RATIO, HOT_MIN_LAG = 5, 100


@dataclass(frozen=True, slots=True)
class GroupFacts:
    """What the group's membership adds to its reason: owners of partitions, rebalances in the window."""

    #: The owner of a (topic, partition) in the cycle of its newest observation, or None.
    owner_of: Callable[[tuple[str, int]], str | None] = lambda _where: None
    rebalances: int = 0
    window_s: float = 0.0


def summarize_group(
    partitions: Iterable[tuple[str, int, PartitionReport]], facts: GroupFacts | None = None
) -> GroupSummary:
    """A group's status is its worst partition's; the reason names that partition and its owner,
    then how many are not OK, a hot partition and the rebalances: why, in one line."""
    rows = sorted(partitions, key=lambda item: (item[0], item[1]))
    if not rows:
        raise ValueError("summarize_group needs at least one partition report")
    facts = facts or GroupFacts()
    worst_topic, worst_partition, worst = max(rows, key=lambda item: STATUS_SEVERITY.get(item[2].status, 0))
    not_ok = sum(1 for _, _, report in rows if report.status != "OK")
    time_lags = [report.time_lag_s for _, _, report in rows if report.time_lag_s is not None]
    owner = facts.owner_of((worst_topic, worst_partition))
    named = f", owner {owner}" if owner and owner not in worst.reason else ""
    reason = f"{worst.reason} [{worst_topic}/{worst_partition}{named}]"
    if not_ok:
        reason += f"; {not_ok} of {len(rows)} partitions not OK"
    hot = hot_partition(rows)
    if hot:
        reason += f"; {hot}"
    if facts.rebalances:
        plural = "s" if facts.rebalances > 1 else ""
        reason += f"; {facts.rebalances} rebalance{plural} in {format_duration(facts.window_s)}"
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


def hot_partition(rows: Sequence[tuple[str, int, PartitionReport]]) -> str | None:
    """ "hot partition t/3 has 92% of the lag" when one partition's lag dwarfs the others'."""
    if len(rows) < 2:
        return None
    topic, partition, top = max(rows, key=lambda item: item[2].lag)
    total = sum(report.lag for _, _, report in rows)
    others_mean = (total - top.lag) / (len(rows) - 1)
    if top.lag < HOT_MIN_LAG or top.lag < HOT_RATIO * others_mean:
        return None
    return f"hot partition {topic}/{partition} has {100 * top.lag / total:.0f}% of the lag"
