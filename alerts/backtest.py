"""Replay rules over the lake's history: what would they have raised and sent?

Why it can answer exactly: the evaluator answers a rule for a whole evaluation grid with the
same query the live engine runs for one step (`alerts.evaluate`), reading each table's rows for
the range once; then the grid is stepped through in memory, and at each step the conditions
true then go through `Notifier.advance`, the call the live engine makes every cycle. So `for`,
thresholds, grouping, group_wait / group_interval / repeat_interval, inhibition and silences
are the engine's own. Nothing is sent and nothing touches the engine's state: the notifier
lives in memory and the lake is only read.
"""

from __future__ import annotations

import bisect
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alerts.evaluate import (
    Condition,
    Evaluator,
    Grid,
    Timeline,
    fingerprint,
    lake_files,
    series_filter,
    sql_literal,
)
from alerts.notify import Notifier, Outgoing, as_before_rename
from alerts.rules import SOURCES, CompiledRule
from lagwatch.backtest_report import (
    AlertRecord,
    Comparison,
    NotificationRecord,
    Report,
    RuleReport,
    StatusChange,
    progress_line,
)
from lagwatch.config import AlertReceiver, Config
from lagwatch.silences import Silence, list_silences
from lagwatch.vocabulary import STATUS_ORDER, status_rank

log = logging.getLogger(__name__)

#: Receiver that plans notifications when none is configured, so their timing is still shown.
STAND_IN_RECEIVER = AlertReceiver(name="(any receiver)", url="http://backtest.invalid/")
#: A status change counts from this level up (a group going STALL, STOP, ERR, LOSS).
CHANGE_LEVEL = "STALL"
PROGRESS_EVERY_S = 2.0


@dataclass
class _Replayed:
    """What stepping the notifier through the grid produced."""

    alerts: dict[str, list[AlertRecord]] = field(default_factory=dict)
    notifications: list[tuple[NotificationRecord, list[dict[str, str]]]] = field(default_factory=list)


def rules_needed(chosen: list[CompiledRule], every: list[CompiledRule], config: Config) -> list[CompiledRule]:
    """The chosen rules plus every rule whose alerts could inhibit one (inhibition needs its source)."""
    names = {r.name for r in chosen}

    def may_source(rule: CompiledRule) -> bool:
        static = {"alertname": rule.name, "severity": rule.severity, **rule.labels}
        names = [static, *filter(None, [as_before_rename(static)])]  # a renamed rule also under its old name
        return any(
            all(labels.get(k, v) == v for k, v in inhibit.source_match.items())
            for inhibit in config.alerts.inhibit_rules
            for labels in names
        )

    return [r for r in every if r.name in names or may_source(r)]


def _notifier(config: Config, rules: list[CompiledRule]) -> tuple[Notifier, bool]:
    alerts = config.alerts
    stand_in = not alerts.receivers
    if stand_in:
        alerts = alerts.model_copy(update={"receivers": [STAND_IN_RECEIVER]})
    external_url = f"http://{config.dashboard.host}:{config.dashboard.port}"
    return Notifier(alerts, rules, external_url), stand_in


def _silences_at(silences: list[Silence], now: float) -> list[Silence]:
    return [s for s in silences if s.active(now)]


class _Steps:
    """Which conditions hold at each step, from the timelines' [k_from, k_to) ranges."""

    def __init__(self, timelines: list[Timeline]) -> None:
        self.conditions: list[Condition] = [c for t in timelines for c in t.conditions]
        k_from = np.concatenate([t.k_from for t in timelines]) if timelines else np.zeros(0, np.int64)
        k_to = np.concatenate([t.k_to for t in timelines]) if timelines else np.zeros(0, np.int64)
        self._starts, self._ends = np.argsort(k_from, kind="stable"), np.argsort(k_to, kind="stable")
        self._k_from, self._k_to = k_from[self._starts], k_to[self._ends]
        self._active: dict[int, Condition] = {}
        self._next_start = self._next_end = 0

    def at(self, step: int) -> list[Condition]:
        """Call with steps in increasing order (any may be skipped: spans wholly between go in and out)."""
        while self._next_start < len(self._k_from) and self._k_from[self._next_start] <= step:
            i = int(self._starts[self._next_start])
            self._active[i] = self.conditions[i]
            self._next_start += 1
        while self._next_end < len(self._k_to) and self._k_to[self._next_end] <= step:
            self._active.pop(int(self._ends[self._next_end]), None)
            self._next_end += 1
        return list(self._active.values())


def _record_events(events: list[dict[str, Any]], replayed: _Replayed, open_alerts: dict[str, AlertRecord]) -> None:
    """Alerts start at their `firing` event and end at `resolved`; suppression is noted on them."""
    for event in events:
        labels = json.loads(event["labels"])
        fp = fingerprint(labels)
        if event["event"] == "firing":
            record = AlertRecord(labels["alertname"], labels, event["ts"], None)
            open_alerts[fp] = record
            replayed.alerts.setdefault(record.rule, []).append(record)
        elif event["event"] == "resolved" and fp in open_alerts:
            open_alerts.pop(fp).ends_at = event["ts"]
        elif event["event"] in ("silenced", "inhibited") and fp in open_alerts:
            open_alerts[fp].suppressed = event["detail"]


def _record_outgoing(outgoing: list[Outgoing], replayed: _Replayed) -> None:
    for item in outgoing:
        n = item.notification
        firing = [a.labels for a in n.alerts if a.status == "firing"]
        rules = sorted({a.labels.get("alertname", "") for a in n.alerts})
        record = NotificationRecord(
            n.receiver, n.kind, n.sent_at, item.incident_key, item.seq, rules, len(firing), len(n.alerts) - len(firing)
        )
        replayed.notifications.append((record, firing))


def _instances(conditions: list[Condition]) -> np.ndarray:
    """Each condition's alert instance as a number: conditions with equal labels share one.

    Each instance's fingerprint is hashed once and handed to all its conditions (it is the
    value `Condition.fingerprint` caches): a week holds many spans of each instance, one per
    row, and hashing each span's own labels is the same work done over and over. Labels are
    text, so equal item sets are equal label sets, which is what equal fingerprints stand for.
    """
    numbers: dict[frozenset[tuple[str, str]], int] = {}
    fingerprints: list[str] = []
    instance = []
    for condition in conditions:
        key = frozenset(condition.labels.items())
        n = numbers.get(key)
        if n is None:
            n = numbers[key] = len(fingerprints)
            fingerprints.append(condition.fingerprint)
        condition.__dict__["fingerprint"] = fingerprints[n]
        instance.append(n)
    return np.asarray(instance, dtype=np.int64)


def _membership_steps(timelines: list[Timeline]) -> list[np.ndarray]:
    """Steps where an alert instance starts or stops being true, and the step before each stop.

    A series' rows follow each other as separate spans with their own values; where one span
    ends as the next of the same instance begins only the value moves, which changes no state
    `advance` acts on. The step before a stop is kept so the value a resolved alert carries
    is the one it had at its last true evaluation, as when every step is visited.
    """
    conditions = [c for t in timelines for c in t.conditions]
    if not conditions:
        return []
    k_from = np.concatenate([t.k_from for t in timelines])
    k_to = np.concatenate([t.k_to for t in timelines])
    instance = _instances(conditions)
    order = np.lexsort((k_from, instance))
    instance, k_from, k_to = instance[order], k_from[order], k_to[order]
    continues = np.concatenate([[False], (instance[1:] == instance[:-1]) & (k_from[1:] == k_to[:-1])])
    continued = np.concatenate([continues[1:], [False]])
    return [k_from[~continues], k_to[~continued], k_to[~continued] - 1]


def _change_steps(grid: Grid, timelines: list[Timeline], silences: list[Silence]) -> np.ndarray:
    """Steps where the true alert instances or the active silences may change (sorted, unique)."""
    bounds = [np.zeros(1, np.int64), *_membership_steps(timelines)]
    for silence in silences:
        for edge in (silence.starts_at, silence.ends_at):
            if math.isfinite(edge):
                k = math.floor((edge - grid.start) / grid.every_s)
                bounds.append(np.array([k, k + 1], np.int64))
    steps = np.unique(np.concatenate(bounds))
    return steps[(steps >= 0) & (steps < grid.steps)]


def _next_step(k: int, changes: np.ndarray, notifier: Notifier, grid: Grid) -> int:
    """The next step after `k` at which `advance` can do anything: a change, or a timer falling due.

    A timer's step is taken at or before its time (a visit too early changes nothing), so
    rounding never makes the replay miss one.
    """
    i = int(np.searchsorted(changes, k, side="right"))
    step = int(changes[i]) if i < len(changes) else grid.steps
    due = notifier.next_timer()
    if due is not None:
        step = min(step, max(k + 1, math.floor((due - grid.start) / grid.every_s)))
    return step


def _step_through(
    grid: Grid, timelines: list[Timeline], notifier: Notifier, silences: list[Silence], progress: Callable[[int], None]
) -> _Replayed:
    """Every evaluation the live engine would make, visiting only those where something can happen.

    At the other steps the true alert instances, the silences and every timer are as at the
    step before, so `advance` there would send nothing and record nothing
    (tests/alerts/test_backtest_steps.py checks the two agree).
    """
    steps, replayed, open_alerts = _Steps(timelines), _Replayed(), {}
    changes = _change_steps(grid, timelines, silences)
    k = visited = 0
    while k < grid.steps:
        now = grid.at(k)
        outgoing, events = notifier.advance(steps.at(k), now, _silences_at(silences, now))
        _record_events(events, replayed, open_alerts)
        _record_outgoing(outgoing, replayed)
        progress(k + 1)
        k, visited = _next_step(k, changes, notifier, grid), visited + 1
    progress(grid.steps)
    log.info("backtest: %d of %d evaluations could change something and were stepped", visited, grid.steps)
    return replayed


def _reads(rule: CompiledRule) -> dict[str, Any]:
    return {
        "table": rule.source.table,
        "time_column": rule.source.time_column,
        "column": rule.value_column,
        "metric": rule.metric,
        "by": list(rule.by),
        "reduce": rule.reduce,
        "op": rule.op,
        "threshold": rule.threshold,
        "level": rule.level,
        "for_s": rule.for_s,
    }


def _rule_report(rule: CompiledRule, replayed: _Replayed, until: float) -> RuleReport:
    alerts = replayed.alerts.get(rule.name, [])
    notifications = [n for n, _ in replayed.notifications if rule.name in n.rules]
    by_receiver: dict[str, int] = {}
    for n in notifications:
        by_receiver[n.receiver] = by_receiver.get(n.receiver, 0) + 1
    firing_s = sum((a.ends_at if a.ends_at is not None else until) - a.starts_at for a in alerts)
    totals = {"alerts": len(alerts), "notifications": len(notifications), "firing_s": firing_s}
    return RuleReport(rule.name, rule.kind, _reads(rule), alerts, notifications, {**totals, "by_receiver": by_receiver})


def status_changes(evaluator: Evaluator, since: float, until: float) -> list[tuple[StatusChange, float | None]]:
    """Groups of the evaluator's clusters going to STALL or worse within the range, each with the
    time of the group's next change.

    Only groups with a row at STALL or worse in the range can have such a change: they are
    found in the raw files first, then read whole through the view, so a week of healthy
    groups is never deduped or windowed.
    """
    source = SOURCES["group_status"]
    time_col = source.time_column
    clusters = ", ".join(sql_literal(c) for c in evaluator.clusters)
    in_range = (
        f"cluster IN ({clusters}) AND {time_col} > make_timestamptz($since) AND {time_col} <= make_timestamptz($until) "
        f"AND {source.prune_column} > make_timestamptz($since - {round(source.prune_slack_s * 1e6)})"
    )
    params = {"since": round(since * 1e6), "until": round(until * 1e6)}
    level = status_rank(CHANGE_LEVEL)
    serious = ", ".join(f"'{s}'" for s in STATUS_ORDER[level:])
    con = evaluator.connection()
    only = series_filter(con, lake_files(evaluator.lake, "group_status"), f"{in_range} AND status IN ({serious})",
                         params, ["cluster", "group_id"])  # fmt: skip
    series = "PARTITION BY cluster, group_id ORDER BY changed_at"
    sql = (
        f"WITH s AS (SELECT cluster, group_id, {time_col} AS changed_at, status FROM group_status "
        f"WHERE {in_range} AND {only}), t AS (SELECT *, lag(status) OVER ({series}) AS previous FROM s) "
        "SELECT cluster, group_id, epoch_us(changed_at) / 1e6, status, previous, "
        f"epoch_us(lead(changed_at) OVER ({series})) / 1e6 "
        "FROM t WHERE previous IS NOT NULL AND status <> previous ORDER BY changed_at, cluster, group_id"
    )
    changes = []
    for cluster, group_id, at, status, previous, next_at in con.execute(sql, params).fetchall():
        if _rank(status) >= level and _rank(status) > _rank(previous):
            changes.append((StatusChange(cluster, group_id, status, previous, at), next_at))
    return changes


def _rank(status: str) -> int:
    try:
        return status_rank(status)
    except ValueError:
        return -1


def _firing_times(replayed: _Replayed, rule: str) -> dict[tuple[str, str], list[float]]:
    """(cluster, group_id) -> when notifications carrying a firing alert of `rule` for it were sent."""
    times: dict[tuple[str, str], list[float]] = {}
    for notification, firing in replayed.notifications:
        for labels in firing:
            if labels.get("alertname") == rule and "group_id" in labels:
                times.setdefault((labels.get("cluster", ""), labels["group_id"]), []).append(notification.sent_at)
    return {key: sorted(values) for key, values in times.items()}


def _with_delays(
    changes: list[tuple[StatusChange, float | None]], rules: list[CompiledRule], replayed: _Replayed
) -> list[StatusChange]:
    """Per rule by group_id: seconds from the change to its first notification before the group's next change."""
    sent_by_rule = {r.name: _firing_times(replayed, r.name) for r in rules if "group_id" in r.by}
    for change, window_end in changes:
        for name, sent_by_group in sent_by_rule.items():
            sent = sent_by_group.get((change.cluster, change.group_id), [])
            i = bisect.bisect_left(sent, change.at)
            found = i < len(sent) and (window_end is None or sent[i] < window_end)
            change.delays[name] = sent[i] - change.at if found else None
    return [change for change, _ in changes]


def _progress_logger(total: int) -> Callable[[int], None]:
    last = [0.0]

    def report(done: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            log.info(progress_line(done, total))

    return report


def backtest(
    config: Config,
    rules: list[CompiledRule],
    chosen: list[str],
    grid: Grid,
    *,
    ignore_silences: bool = False,
    cluster: str | None = None,
) -> Report:
    """Replay `rules` over `grid`; report the `chosen` ones (inhibiting rules are evaluated too).

    Every configured cluster, as the live engine reads them, or only `cluster` (its name in the config)."""
    started = time.monotonic()
    picked = [r for r in rules if r.name in chosen]
    needed = rules_needed(picked, rules, config)
    clusters = [config.cluster_named(cluster).name] if cluster else [c.name for c in config.clusters]
    evaluator = Evaluator(config, needed, clusters)
    try:
        evaluator.load(grid.start, grid.end)
        log.info("backtest: read the lake for %d rules in %.1f s", len(needed), time.monotonic() - started)
        timelines = evaluator.timelines(grid, strict=True)
        conditions = sum(len(t.conditions) for t in timelines)
        log.info("backtest: %d condition spans over %d steps (%.1f s)", conditions, grid.steps,
                 time.monotonic() - started)  # fmt: skip
        notifier, stand_in = _notifier(config, needed)
        silences = [] if ignore_silences else [_silence(s) for s in list_silences(config)]
        replayed = _step_through(grid, timelines, notifier, silences, _progress_logger(grid.steps))
        log.info("backtest: stepped (%.1f s)", time.monotonic() - started)
        changes = status_changes(evaluator, grid.start, grid.end)
        log.info("backtest: %d status changes (%.1f s)", len(changes), time.monotonic() - started)
    finally:
        evaluator.close()
    return Report(
        clusters=clusters,
        since=grid.start,
        until=grid.end,
        evaluate_every_s=grid.every_s,
        steps=grid.steps,
        silences_applied=not ignore_silences,
        stand_in_receiver=stand_in,
        rules=[_rule_report(r, replayed, grid.end) for r in picked],
        status_changes=_with_delays(changes, picked, replayed),
        elapsed_s=time.monotonic() - started,
    )


def _silence(raw: dict[str, Any]) -> Silence:
    return Silence(**{k: v for k, v in raw.items() if k != "active"})


def _overlaps(a: AlertRecord, b: AlertRecord, until: float) -> bool:
    a_end = a.ends_at if a.ends_at is not None else until
    b_end = b.ends_at if b.ends_at is not None else until
    return a.starts_at <= b_end and b.starts_at <= a_end


def _only_in(mine: Report, theirs: Report) -> list[AlertRecord]:
    """Alerts of `mine` that no alert of `theirs` with the same labels overlaps in time."""
    other: dict[str, list[AlertRecord]] = {}
    for rule in theirs.rules:
        for alert in rule.alerts:
            other.setdefault(fingerprint(alert.labels), []).append(alert)
    return [
        alert
        for rule in mine.rules
        for alert in rule.alerts
        if not any(_overlaps(alert, o, mine.until) for o in other.get(fingerprint(alert.labels), []))
    ]


def compare(a: Report, b: Report) -> Comparison:
    return Comparison(a=a, b=b, only_a=_only_in(a, b), only_b=_only_in(b, a))
