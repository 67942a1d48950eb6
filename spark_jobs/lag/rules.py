"""The lag statuses: the thresholds a group is judged by, the evidence, one function per rule,
and RULES, the table they are applied by (first match wins).

RULES is the one statement of the rules: :func:`judge` walks it, and the rules table of
docs/rollups.md is generated from it (``python -m spark_jobs.lag.rules``; a test checks the
doc is current). Burrow's rules over the commit window, with the group's membership as
evidence. Why the time rules count from the later of the last commit and the last caught-up
observation: a consumer owes a commit only once there is something to read, so a group caught
up on a quiet topic stays OK however long it has not committed.

Membership is what the group coordinator said in the observation's own collector cycle.
Without a reading for that cycle (tansu describes no members, or the describe did not answer)
the membership rules are skipped and a time rule's reason says it was judged by time alone.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import lt, sub
from pathlib import Path

from lagwatch.config import LagConfig
from spark_jobs.lag import reasons

#: A partition's commits from the commit log: (commit timestamps, offsets), in time order.
Commits = tuple[Sequence[int], Sequence[int]]

#: A partition's usual commit gap (or standstill) counts double before its silence is alarming.
USUAL_GAP_FACTOR = 2
#: Lag rising over part of the window is WARN once the consumer fell behind by this share of
#: the records produced meanwhile (consuming at most 75 % of the produce rate).
RISING_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The knobs one group is judged by: the LagConfig defaults, then its cluster's `lag`
    overrides ([[clusters]] ``lag``), then its own ``[lag.group_thresholds]`` entry: the
    narrower statement wins, so one noisy group can be tuned inside a cluster-wide setting."""

    window_s: float
    window_ms: int
    stop_after_s: float
    min_window_points: int
    min_history_points: int
    history_points: int
    empty_cycles: int
    stall_cycles: int
    warn_lag: float | None = None
    warn_time_lag_s: float | None = None

    @classmethod
    def for_group(cls, config: LagConfig, group_id: str, cluster_lag: Mapping[str, float] | None = None) -> Thresholds:
        """``cluster_lag``: the group's cluster's threshold overrides (None: the cluster sets none)."""
        overrides = {**(cluster_lag or {}), **config.group_thresholds.get(group_id, {})}
        return cls(
            window_s=config.window_s,
            window_ms=config.window_ms,
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
    #: The commit log recorded the group going empty (the coordinator's record, not a poll).
    logged_empty: bool = False


@dataclass(frozen=True, slots=True)
class Outage:
    """A cluster whose admin collector's newest cycle failed (`up` = 0): no offsets were read."""

    cluster: str
    #: The first failed cycle of the run, and the newest one (the judgement's time).
    since_ms: int
    at_ms: int


@dataclass(frozen=True, slots=True)
class Verdict:
    status: str
    rule: str
    reason: str


@dataclass(slots=True)
class Case:
    """One partition's commit window and evidence, as the rules read it (not frozen: built per report)."""

    ts: Sequence[int]
    committed: Sequence[int]
    lag: Sequence[int]
    committed_since_ms: int
    caught_up_ms: int
    commit_ts: Sequence[int]
    commit_offset: Sequence[int]
    time_lag_s: float | None
    log_start: int | None
    membership: Membership | None
    thresholds: Thresholds
    #: The group's cluster could not be read at the newest cycle (None: it was read).
    outage: Outage | None = None

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
        return max(map(sub, stamps[1:], stamps[:-1]), default=0) / 1000.0

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

    def evidence(self) -> str:
        membership = self.membership
        if membership is None:
            return reasons.membership_evidence(False, None, False)
        return reasons.membership_evidence(True, membership.owner, membership.owners_known)


def _went_back(offsets: Sequence[int]) -> int:
    """Index of the newest offset lower than the one before it; 0 when none went back."""
    if not any(map(lt, offsets[1:], offsets[:-1])):  # the usual case, decided without a Python loop
        return 0
    for i in range(len(offsets) - 1, 0, -1):
        if offsets[i] < offsets[i - 1]:
            return i
    return 0


# -- one function per rule: the reason when it applies, else None ------------------------------------


def unreachable(case: Case) -> str | None:
    outage = case.outage
    if outage is None:
        return None
    return reasons.unreachable(outage.cluster, outage.since_ms, case.now_ms, case.committed[-1], case.lag[-1])


def loss(case: Case) -> str | None:
    committed = case.committed[-1]
    if case.log_start is None or committed >= case.log_start:
        return None
    return reasons.loss(committed, case.log_start)


def commit_went_back(case: Case) -> str | None:
    return _rewind(case.commit_offset, case.commit_ts, reasons.commit_went_back)


def caught_up(case: Case) -> str | None:
    return reasons.caught_up() if case.lag[-1] <= 0 else None


def offset_went_back(case: Case) -> str | None:
    return _rewind(case.committed, case.ts, reasons.offset_went_back)


def _rewind(offsets: Sequence[int], stamps: Sequence[int], phrase: Callable[[int, int, int], str]) -> str | None:
    back = _went_back(offsets)
    return phrase(offsets[back - 1], offsets[back], stamps[back]) if back else None


def stop_empty(case: Case) -> str | None:
    """No members for ``empty_cycles`` cycles (or since the commit log recorded it) and no commit since."""
    membership = case.membership
    if membership is None or not (membership.logged_empty or membership.empty_cycles >= case.thresholds.empty_cycles):
        return None
    committed_since = case.commit_ts[-1] if case.commit_ts else case.committed_since_ms
    if committed_since > membership.empty_since_ms:
        return None  # commits without members: assign()-style consumers, judged by time
    return reasons.stop_empty(
        membership.empty_cycles, membership.empty_since_ms, case.committed[-1], case.lag[-1], membership.logged_empty
    )


def stop_silent(case: Case) -> str | None:
    """Silent for longer than stop_after_s or twice the usual gap."""
    silent_s = case.silent_s()
    usual_gap_s = case.usual_gap_s()
    stop_after_s = case.thresholds.stop_after_s
    if silent_s <= max(stop_after_s, USUAL_GAP_FACTOR * usual_gap_s):
        return None
    longer_gap = usual_gap_s if USUAL_GAP_FACTOR * usual_gap_s > stop_after_s else None
    return reasons.stop_silent(
        silent_s,
        reasons.stop_limit(stop_after_s, longer_gap, USUAL_GAP_FACTOR),
        case.last_move_ms,
        case.caught_up_ms,
        case.commit_ts[-1] if case.commit_ts else None,
        case.committed[-1],
        case.lag[-1],
        case.evidence(),
    )


def stall_owned(case: Case) -> str | None:
    """Owned by a member, the offset standing still for stall_cycles (and twice its usual run)."""
    membership = case.membership
    if membership is None or membership.owner is None:
        return None
    run, usual_run = case.standstills()
    if run < max(case.thresholds.stall_cycles, USUAL_GAP_FACTOR * usual_run):
        return None
    standing_s = (case.now_ms - case.ts[-run]) / 1000.0
    return reasons.stall_owned(case.committed[-1], run, standing_s, membership.owner, case.lag[-1])


def stall_commits(case: Case) -> str | None:
    """Commit log: commits keep arriving, all of one offset."""
    if not case.commit_ts:
        return None
    after = bisect_right(case.commit_ts, case.caught_up_ms)  # commits made while there was something to read
    commit_ts, commit_offset = case.commit_ts[after:], case.commit_offset[after:]
    count = len(commit_ts)
    if count < case.thresholds.min_window_points or commit_offset.count(commit_offset[-1]) != count:
        return None
    longest_gap_ms = max(map(sub, commit_ts[1:], commit_ts[:-1]))
    if case.now_ms - commit_ts[-1] > longest_gap_ms:
        return None
    return reasons.stall_commits(count, commit_offset[-1], (commit_ts[-1] - commit_ts[0]) / 1000, case.lag[-1])


def stall_unchanged(case: Case) -> str | None:
    """No commit log: the same committed offset at every observation of the window."""
    if case.commit_ts:
        return None
    points = len(case.ts) - bisect_right(case.ts, case.caught_up_ms)  # observations with lag since caught up
    if points < case.thresholds.min_window_points or case.committed[0] != case.committed[-1]:
        return None
    return reasons.stall_unchanged(case.committed[-1], case.silent_s(), points, case.lag[-1], case.evidence())


def lag_rising(case: Case) -> str | None:
    """Lag never fell over the newest observations while the consumer fell behind by at least
    RISING_SHARE of what was produced (a healthy consumer's lag jitters within its commit
    interval's worth of records, a falling-behind one's grows), or never fell for at least half
    the window (Burrow's rule, for a consumer falling behind slowly)."""
    lag, points = case.lag, len(case.ts)
    start = points - 1
    while start > 0 and lag[start] >= lag[start - 1]:
        start -= 1
    run = points - start
    if run < case.thresholds.min_window_points or lag[-1] <= lag[start]:
        return None
    produced = (case.committed[-1] + lag[-1]) - (case.committed[start] + lag[start])
    behind = (lag[-1] - lag[start]) / produced if produced > 0 else 0.0
    whole_window = start == 0 and case.now_ms - case.ts[0] >= case.thresholds.window_ms / 2
    if behind < RISING_SHARE and not whole_window:
        return None
    span_s = (case.now_ms - case.ts[start]) / 1000
    return reasons.lag_rising(lag[start], lag[-1], span_s, run, behind if produced > 0 else None)


def warn_lag(case: Case) -> str | None:
    threshold, lag = case.thresholds.warn_lag, case.lag[-1]
    return reasons.warn_lag(lag, threshold) if threshold is not None and lag > threshold else None


def warn_time_lag(case: Case) -> str | None:
    threshold, time_lag_s = case.thresholds.warn_time_lag_s, case.time_lag_s
    if threshold is None or time_lag_s is None or time_lag_s <= threshold:
        return None
    return reasons.warn_time_lag(time_lag_s, threshold)


def no_rule(case: Case) -> str:
    return reasons.no_rule(case.lag[-1])


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the rules table: the status and rule id it gives, and when (in words and in code)."""

    id: str
    status: str
    when: str
    check: Callable[[Case], str | None]


#: The rules in order; the first whose check gives a reason wins.
RULES: tuple[Rule, ...] = (
    Rule("unreachable", "ERR", "the group's cluster could not be read: its admin collector's newest cycle failed "
         "(`up` = 0), so no offsets came. Every known partition and group of that cluster is ERR as of that cycle, "
         "its offsets, lag and rates NULL (the old lag is not current); the reason says since when and what was "
         "last observed (the group's: its last status). Judging resumes with the next cycle that reads offsets",
         unreachable),
    Rule("loss", "LOSS", "the committed offset is below the partition's log start: retention (or deleteRecords) "
         "deleted `log start − committed` records the group never read; the reason gives the count", loss),
    Rule("rewind", "REWIND", "commit log: a commit within the window is lower than the commit before it, even if "
         "undone before the next cycle and even if caught up now", commit_went_back),
    Rule("caught_up", "OK", "lag is 0", caught_up),
    Rule("rewind", "REWIND", "the committed offset went back between two observations within the window",
         offset_went_back),
    Rule("stop_empty", "STOP", "membership: lag > 0, the group had no members (`Empty` or `Dead`) at the newest "
         "`lag.empty_cycles` cycles, or since the commit log recorded it going empty (its last member left), and "
         "no commit since the first of them", stop_empty),
    Rule("stop", "STOP", "lag > 0 and silent for longer than `stop_after_s` or twice the partition's usual commit "
         "gap in the window, whichever is longer; silent = no commit (commit log) or the committed offset unchanged "
         "(OffsetFetch). A member owning the partition does not prevent it; the reason names it", stop_silent),
    Rule("stall_owned", "STALL", "membership: lag > 0, a member owns the partition, and the committed offset is the "
         "same at the newest `lag.stall_cycles` observations, and at least twice its longest earlier standstill in "
         "the window", stall_owned),
    Rule("stall", "STALL", "commit log: lag > 0, at least `lag.min_window_points` commits in the window, all of one "
         "offset, and the newest no older than the longest gap between them", stall_commits),
    Rule("stall", "STALL", "no commit log: lag > 0 and the committed offset is the same at every observation in the "
         "window (at least `lag.min_window_points` of them)", stall_unchanged),
    Rule("lag_rising", "WARN", "lag never fell over its newest observations while it grew by at least a quarter of "
         "the records produced meanwhile (the consumer reads at most 75 % of the produce rate), or it never fell and "
         "rose overall over a window spanning at least half of `window_s` (Burrow's rule, for a slow drift); at "
         "least `min_window_points` observations either way", lag_rising),
    Rule("warn_lag", "WARN", "lag above the group's `warn_lag`: its entry in `[lag.group_thresholds]`, else its "
         "cluster's `lag` in `[[clusters]]`", warn_lag),
    Rule("warn_time_lag_s", "WARN", "time lag above the group's `warn_time_lag_s`: its entry in "
         "`[lag.group_thresholds]`, else its cluster's `lag` in `[[clusters]]`", warn_time_lag),
    Rule("ok", "OK", "none of the above", no_rule),
)  # fmt: skip


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
    outage: Outage | None = None,
) -> Verdict:
    """The first rule of RULES that applies.

    ``commits`` are the commit log's (commit ts, offset) lists in time order, empty without it;
    ``caught_up_ms`` is the newest observation with lag 0 (-1: none), where the time rules start;
    ``log_start`` the partition's newest log start offset (None: not read); ``membership`` the
    coordinator's word in the newest observation's cycle (None: no reading); ``outage`` the
    cluster's failed admin cycle when it could not be read (None: it was).
    """
    case = Case(
        window_ts,
        window_committed,
        window_lag,
        committed_since_ms,
        caught_up_ms,
        commits[0],
        commits[1],
        time_lag_s,
        log_start,
        membership,
        thresholds,
        outage,
    )
    for rule in RULES:
        reason = rule.check(case)
        if reason is not None:
            return Verdict(rule.status, rule.id, reason)
    raise AssertionError("the last rule always applies")


# -- docs/rollups.md: the rules table sits between these markers -------------------------------------

DOCS_BEGIN = "<!-- rules:begin (generated by `python -m spark_jobs.lag.rules`; edit spark_jobs/lag/rules.py) -->"
DOCS_END = "<!-- rules:end -->"
#: The table sits in a list item of docs/rollups.md.
_INDENT = "  "


def markdown() -> str:
    """The rules table docs/rollups.md shows, in RULES order."""
    lines = ["| status | rule | when |", "|---|---|---|", *(f"| {r.status} | {r.id} | {r.when} |" for r in RULES)]
    return "\n".join(_INDENT + line for line in lines)


def render_docs(text: str) -> str:
    """`text` (docs/rollups.md) with its generated block replaced by the current table."""
    start, end = text.index(DOCS_BEGIN), text.index(DOCS_END) + len(DOCS_END)
    return f"{text[:start]}{DOCS_BEGIN}\n{markdown()}\n{_INDENT}{DOCS_END}{text[end:]}"


def main() -> None:
    """Rewrite the generated block of docs/rollups.md in place."""
    path = Path(__file__).resolve().parents[2] / "docs" / "rollups.md"
    path.write_text(render_docs(path.read_text()))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
