"""Every reason string of lag_1m and group_status, composed here and nowhere else.

Why one home: a reason is what an operator reads first, so its wording, its order of clauses
and its number formats must not drift between the rules, the time lag, the group summary and
the broker events. The other modules decide *what* is true; these functions only phrase it,
and a reason is never edited after it is built.
"""

from __future__ import annotations

from collections.abc import Sequence

from lagwatch.vocabulary import ABOVE_ZERO, BECAME_ONE, BrokerEvent

#: Brokers a broker event clause names at most (cluster-wide first, then by number); the rest are counted.
MAX_BROKERS = 5


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


# -- the rules' verdicts (spark_jobs/lag/rules.py) ---------------------------------------------------


def _unreachable_since(cluster: str, since_ms: int) -> str:
    return f"ERR: cluster {cluster} unreachable since {format_clock(since_ms)}: no offsets"


def unreachable(cluster: str, since_ms: int, last_ms: int, committed: int, lag: int) -> str:
    last = f"last observed at {format_clock(last_ms)} (committed offset {committed}, lag {lag} then)"
    return f"{_unreachable_since(cluster, since_ms)}, {last}"


def group_unreachable(cluster: str, since_ms: int, last_status: str, last_ms: int, last_total_lag: int) -> str:
    last = f"last judged {last_status} at {format_clock(last_ms)} (total lag {last_total_lag} then)"
    return f"{_unreachable_since(cluster, since_ms)}, {last}"


def loss(committed: int, log_start: int) -> str:
    deleted = log_start - committed
    return f"LOSS: {deleted} records deleted unread (committed offset {committed} < log start {log_start})"


def commit_went_back(before: int, after: int, at_ms: int) -> str:
    return f"REWIND: a commit went back from {before} to {after} at {format_clock(at_ms)}"


def caught_up() -> str:
    return "OK: caught up (lag 0)"


def offset_went_back(before: int, after: int, at_ms: int) -> str:
    return f"REWIND: committed offset went back from {before} to {after} at {format_clock(at_ms)}"


def stop_empty(empty_cycles: int, empty_since_ms: int, committed: int, lag: int, logged: bool = False) -> str:
    logged_text = " (the commit log recorded its last member leaving)" if logged else ""
    return (
        f"STOP: group empty for {empty_cycles} cycles since {format_clock(empty_since_ms)}{logged_text}, "
        f"no commit since (committed offset {committed}, lag {lag})"
    )


def stop_silent(
    silent_s: float,
    limit: str,
    last_move_ms: int,
    caught_up_ms: int,
    last_commit_ms: int | None,
    committed: int,
    lag: int,
    evidence: str,
) -> str:
    """``last_commit_ms`` is the newest commit of the commit log (None without it)."""
    since = since_caught_up(last_move_ms, caught_up_ms)
    if last_commit_ms is not None:
        last = format_clock(last_commit_ms)
        what = f"no commit for {format_duration(silent_s)}{since} > {limit} (last commit at {last}, "
    else:
        what = f"committed offset unchanged for {format_duration(silent_s)}{since} > {limit} ("
    return f"STOP: {what}committed offset {committed}, lag {lag}){evidence}"


def stop_limit(stop_after_s: float, usual_gap_s: float | None, factor: int) -> str:
    """The threshold a STOP names: stop_after_s, or the usual gap when that is longer (``usual_gap_s`` set)."""
    if usual_gap_s is not None:
        return f"{factor} x usual gap {format_duration(usual_gap_s)}"
    return f"stop_after_s {format_duration(stop_after_s)}"


def since_caught_up(last_move_ms: int, caught_up_ms: int) -> str:
    """The note when the silence is counted from the last caught-up observation."""
    return f" since lag appeared (caught up at {format_clock(caught_up_ms)})" if caught_up_ms > last_move_ms else ""


def membership_evidence(known: bool, owner: str | None, owners_known: bool) -> str:
    """What a time rule's reason says of membership: it had none (``known`` False), or what it said."""
    if not known:
        return ", judged by time: no membership reading"
    if owner is not None:
        return f", while {owner} still owns it"
    return ", no member owns it" if owners_known else ""


def stall_owned(committed: int, run: int, standing_s: float, owner: str, lag: int) -> str:
    return (
        f"STALL: committed offset {committed} unchanged at {run} cycles ({format_duration(standing_s)}) "
        f"while {owner} owns it, lag {lag}"
    )


def stall_unchanged(committed: int, silent_s: float, points: int, lag: int, evidence: str) -> str:
    return (
        f"STALL: committed offset {committed} not moving for {format_duration(silent_s)} "
        f"({points} observations) while lag is {lag}{evidence}"
    )


def stall_commits(count: int, offset: int, span_s: float, lag: int) -> str:
    return f"STALL: {count} commits of offset {offset} in {format_duration(span_s)} while lag is {lag}"


def lag_rising(first: int, last: int, span_s: float, run: int, behind: float | None) -> str:
    """``behind``: the share of the records produced meanwhile the consumer fell behind by (None: nothing produced)."""
    share = f", {100 * behind:.0f}% of what was produced" if behind is not None else ""
    return f"WARN: lag rising from {first} to {last} over {format_duration(span_s)} ({run} observations{share})"


def warn_lag(lag: int, threshold: float) -> str:
    return f"WARN: lag {lag} > warn_lag {format_number(threshold)}"


def warn_time_lag(time_lag_s: float, threshold_s: float) -> str:
    return f"WARN: time lag {format_duration(time_lag_s)} > warn_time_lag_s {format_duration(threshold_s)}"


def no_rule(lag: int) -> str:
    return f"OK: lag {lag}, no rule matched"


# -- time lag (spark_jobs/lag/time_lag.py) ------------------------------------------------------------


def time_lag_too_few_points(points: int, needed: int) -> str:
    return f"{points} log-end point(s), need {needed}"


def time_lag_older_than_history(committed: int, oldest_end: int, oldest_ms: int) -> str:
    return (
        f"committed offset {committed} is older than the log-end history "
        f"(oldest point {oldest_end} at {format_clock(oldest_ms)})"
    )


def time_lag_history_ends(newest_end: int, committed: int) -> str:
    return f"log-end history ends at {newest_end}, not above committed offset {committed}"


def time_lag_out_of_range() -> str:
    return "offsets out of range"


def time_lag_unknown(why: str) -> str:
    return f"time lag unknown: {why}"


def time_lag_lower_bound(seconds: float, committed: int, since_ms: int, why: str) -> str:
    """A time lag known only as a floor: how big, from what, and why it was not interpolated."""
    return (
        f"time lag ≥ {format_duration(seconds)} (lower bound: offset {committed} existed by "
        f"{format_clock(since_ms)}; not interpolated: {why})"
    )


def partition(verdict: str, time_lag_note: str) -> str:
    """A lag_1m reason: the verdict, then why the time lag is unknown or only a lower bound."""
    return f"{verdict}; {time_lag_note}" if time_lag_note else verdict


# -- the retention margin (spark_jobs/lag/retention.py): lag_1m's retention_reason ------------------


def retention_passed(deleted: int) -> str:
    return f"passed: retention deleted {deleted} records the group never read"


def retention_not_read() -> str:
    return "no margin: the topic's retention settings were not read yet"


def retention_compacted() -> str:
    return "no margin: cleanup.policy=compact, retention never deletes on this topic"


def retention_infinite() -> str:
    return "no margin: retention.ms = -1 and retention.bytes = -1, retention never deletes on this topic"


def retention_caught_up() -> str:
    return "no margin: caught up, nothing unread for retention to delete"


def retention_time(retention_ms: float, age_s: float, at_least: bool) -> str:
    limit = f"time limit nearer: retention.ms {format_number(retention_ms)} ({format_duration(retention_ms / 1000.0)})"
    if at_least:
        return (
            f"{limit}; the committed record is at least {format_duration(age_s)} old (older than the log-end "
            f"history), so the margin is at most this"
        )
    return f"{limit}; the committed record is {format_duration(age_s)} old"


def retention_size(retention_bytes: float, lag: int, seconds: float, produce_rate: float | None) -> str:
    rate = f"{produce_rate:.3g} records/s" if produce_rate else "no produce rate"
    return (
        f"size limit nearer: retention.bytes {format_number(retention_bytes)} per partition, {lag} records behind "
        f"the committed offset, {rate}: {format_duration(seconds)}"
    )


def retention_unknown(time_limit: float | None, size_limit: float | None, size_known: bool) -> str:
    missing = []
    if time_limit is not None:
        missing.append("the committed record's age is unknown (no log-end history yet)")
    if size_limit is not None:
        missing.append("nothing is produced" if size_known else "the partition size is unknown")
    return "no margin: " + "; ".join(missing)


# -- the group (spark_jobs/lag/group.py) ----------------------------------------------------------------


def hot_partition(topic: str, number: int, percent: float) -> str:
    return f"hot partition {topic}/{number} has {percent:.0f}% of the lag"


def group(
    worst_reason: str,
    where: tuple[str, int],
    owner: str | None,
    not_ok: int,
    partitions: int,
    hot: str | None,
    rebalances: int,
    window_s: float,
    broker_events: str | None,
    storm: str | None = None,
) -> str:
    """A group_status reason: its worst partition's reason and where it is, then the facts that explain it.
    ``storm``: the :func:`rebalance_storm` clause when the group's rebalances make a storm, said instead of
    the window's count."""
    named = f", owner {owner}" if owner and owner not in worst_reason else ""
    reason = f"{worst_reason} [{where[0]}/{where[1]}{named}]"
    if not_ok:
        reason += f"; {not_ok} of {partitions} partitions not OK"
    if hot:
        reason += f"; {hot}"
    if storm is not None:
        reason += f"; {storm}"
    elif rebalances:
        plural = "s" if rebalances > 1 else ""
        reason += f"; {rebalances} rebalance{plural} in {format_duration(window_s)}"
    if broker_events is not None:
        reason += f"; {broker_events}"
    return reason


def rebalance_storm(rebalances: int, window_s: float) -> str:
    return f"rebalance storm: {rebalances} rebalances in {format_duration(window_s)}"


# -- broker events (spark_jobs/lag/broker_events.py) ---------------------------------------------------

#: One broker's figures for one event: (event, worst value or sum, least value, first ts ms, samples).
EventFigures = tuple[BrokerEvent, float, float, int, int]


def broker_events(by_broker: Sequence[tuple[str | None, Sequence[EventFigures]]]) -> str | None:
    """Brokers' events as one clause, e.g. ``broker 1: 3 under-replicated partitions at 10:02:15,
    2 ISR shrinks from 10:02:15``; cluster-wide (None) as ``cluster``; None when there were none.
    ``by_broker`` is in the order to name them; past MAX_BROKERS the rest are counted."""
    if not by_broker:
        return None
    named = [
        f"{'cluster' if broker is None else f'broker {broker}'}: {', '.join(_phrase(*f) for f in figures)}"
        for broker, figures in by_broker[:MAX_BROKERS]
    ]
    more = len(by_broker) - MAX_BROKERS
    return "; ".join(named) + (f"; {more} more broker{'s' if more > 1 else ''} with events" if more > 0 else "")


def _phrase(event: BrokerEvent, amount: float, least: float, first_ms: int, samples: int) -> str:
    """`3 under-replicated partitions at 10:02:15`, `up to 5 … from …`, `became the active controller at …`."""
    when = f"at {format_clock(first_ms)}" if samples == 1 else f"from {format_clock(first_ms)}"
    if event.rule == BECAME_ONE:
        return f"{event.noun} {when}" if samples == 1 else f"{event.noun} {samples} times {when}"
    noun = event.noun if amount == 1 else f"{event.noun}s"
    up_to = "up to " if event.rule == ABOVE_ZERO and least != amount else ""
    return f"{up_to}{format_number(amount)} {noun} {when}"
