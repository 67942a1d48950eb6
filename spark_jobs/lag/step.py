"""The operator's lag step: a batch of lag samples in, lag_1m rows per group-partition and
group_status rows per group out (``rollups.py`` runs it in the job's one stateful operator).

Input: the admin collector's `committed_offset` and `consumer_lag` samples, paired into
observations (``pairing.py``); the commit log's commits; the per-group log start
(`group_log_start_offset`, read in the cycle of the committed offset: each partition keeps its
newest one, for LOSS and the retention margin) and likewise its size on disk
(`group_partition_size_bytes`, the retention margin's size limit); and the membership samples
(``membership.py``).
`log_end_offset` samples are per partition, not per group, and need no pairing: the end offset
is already implied here.

State is kept per (cluster, group) — all partitions of a group in one place, so a group's
status is computed from every partition's newest state even when one micro-batch carries only
some of them. Groups are hashed into ``STATE_BUCKETS`` buckets (one Python call per bucket,
not per group: see windows.py for why); a bucket's state is a pickled dict of
:class:`~spark_jobs.lag.tracker.PartitionTracker` state tuples keyed by group, then
(topic, partition) (:func:`encode_groups` / :func:`decode_groups`). Membership lives in the
same bucket: each report is judged with its cycle's membership as evidence
(``_Rows.evidence``; the rules are in ``rules.py``), and the owner, the group's state, member
count, epoch, rebalances and each partition's pending owner join the rows.

Rows are keyed by the lake's column names (``lagwatch.lake.TABLES``) and checked against them
(``lake.row_columns``): a declared column a row lacks is an error, never a silent NULL.
Per batch: one lag_1m row per group-partition and 1-minute window that received an observation
(values as of the newest observation in that window), and one group_status row per group
touched, as of its newest window (window_start = that minute, updated_at = the newest
observation's time, so a status is never stamped in the future). A group-partition not
observed for ``2 × lag.window_s`` leaves the state (topic deleted, group no longer committing
to it); until then it still counts in its group's status, so an empty group that stopped
consuming keeps being evaluated.
"""

from __future__ import annotations

import logging
import pickle
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import fields
from functools import cache, partial
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
import pandas as pd

from lagwatch import lake
from lagwatch.config import LagConfig
from lagwatch.vocabulary import GROUP_LOG_START_METRIC, GROUP_SIZE_METRIC
from spark_jobs.lag import broker_events, membership, reasons, retention, unreachable
from spark_jobs.lag.group import GroupFacts, GroupSummary, summarize_group
from spark_jobs.lag.pairing import (
    LAG_METRICS,
    PAIR_LABELS,
    PARTITION_READING_METRICS,
    GroupTracks,
    pair_across_batches,
    pair_in_batch,
    split_commits,
)
from spark_jobs.lag.rules import Membership, Outage, Thresholds
from spark_jobs.lag.tracker import REPORT_COLUMNS, PartitionReport, PartitionTracker
from spark_jobs.windows import series_labels

log = logging.getLogger(__name__)

PERIOD_MS = 60_000
#: A row of a lake table, keyed by its column names (lagwatch.lake.TABLES).
Row = dict[str, Any]
#: A report's lag_1m values in REPORT_COLUMNS order, in one C call per row (not one per column).
_report_values = attrgetter(*REPORT_COLUMNS)
#: Every GroupSummary field is the group_status column of the same name.
_SUMMARY_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(GroupSummary))
_summary_values = attrgetter(*_SUMMARY_COLUMNS)


def encode_groups(groups: dict[tuple[str, str], GroupTracks]) -> bytes:
    plain = {key: {where: track.to_state() for where, track in tracks.items()} for key, tracks in groups.items()}
    return pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)


def decode_groups(blob: bytes) -> dict[tuple[str, str], GroupTracks]:
    plain = pickle.loads(blob)
    return {
        key: {where: PartitionTracker.from_state(saved) for where, saved in tracks.items()}
        for key, tracks in plain.items()
    }


def update_lag(
    samples: pd.DataFrame,
    groups: dict[tuple[str, str], GroupTracks],
    memberships: dict[tuple[str, str], membership.GroupMembership],
    lag_config: LagConfig,
    watermark_ms: int,
    events: broker_events.BrokerEvents | None = None,
    cluster_lag: Mapping[str, Mapping[str, float]] | None = None,
    outages: Mapping[str, Outage] | None = None,
    unreachable_clusters: Collection[str] = (),
    settings: retention.TopicSettings | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Fold a batch into the groups' trackers and membership (in place); return (lag_1m, group_status)
    columns. ``events``: the bucket's broker events, named in the reason of a group that is not OK;
    ``cluster_lag``: cluster name → its threshold overrides (``[[clusters]] lag``); ``outages``: the
    clusters whose admin cycle failed in this batch, whose groups are ERR (``unreachable.py``);
    ``unreachable_clusters``: every cluster unreachable now, whose groups stay in the state however
    long they go unobserved (their ERR rows need them); ``settings``: the bucket's topic retention
    settings, for each partition's retention margin."""
    thresholds_for = _thresholds_of(lag_config, cluster_lag or {})
    rows = _Rows(memberships, membership.BatchReadings(), events, lag_config.window_ms, settings)
    if not samples.empty:
        rows = _fold_samples(samples, groups, rows, lag_config, thresholds_for)
    group_rows = [
        row
        for key, period in rows.newest_period.items()
        if (row := _group_row(key, groups[key], period, lag_config, rows, thresholds_for(key))) is not None
    ]
    partition_rows = rows.partition_rows
    if outages:
        lost_partitions, lost_groups = unreachable.rows(
            groups,
            outages,
            lag_config.window_ms,
            PERIOD_MS,
            thresholds_for,
            partial(_last_judgement, groups, lag_config, rows, thresholds_for),
            partial(_group_type, memberships),
        )
        partition_rows = _replaced("lag_1m", partition_rows, lost_partitions)
        group_rows = _replaced("group_status", group_rows, lost_groups)
    _forget_silent(groups, memberships, watermark_ms, lag_config, set(unreachable_clusters))
    return _columns("lag_1m", partition_rows), _columns("group_status", group_rows)


def _fold_samples(
    samples: pd.DataFrame,
    groups: dict[tuple[str, str], GroupTracks],
    rows: _Rows,
    lag_config: LagConfig,
    thresholds_for: ThresholdsOf,
) -> _Rows:
    """The batch's lag and membership samples into the state (``rows.memberships``); the rows
    (and reports) they make."""
    metric = series_labels(samples["series_key"].to_numpy(), ("metric",))["metric"]
    is_reading = np.isin(metric, PARTITION_READING_METRICS)  # per partition state, not a membership reading
    is_offset = np.isin(metric, LAG_METRICS) & ~is_reading
    keep_ms = max(lag_config.window_ms, PERIOD_MS)
    membership_keep_ms = max(keep_ms, lag_config.rebalance_storm_window_ms)  # the storm's window may be longer
    rows.readings = membership.fold_readings(samples[~(is_offset | is_reading)], rows.memberships, membership_keep_ms)
    cycle_samples, cycle_labels, commit_rows = split_commits(samples[is_offset])
    observations, halves = pair_in_batch(cycle_samples, cycle_labels)
    observations = pair_across_batches(observations, halves, groups, keep_ms)
    commits = _commits_by_partition(commit_rows)
    _fold_partition_readings(samples[is_reading], metric[is_reading], groups)
    keys = ["cluster", "group_id", "topic", "partition"]
    codes = observations["pkey"].to_numpy(np.int64)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else np.empty(0, int)
    ends = np.r_[starts[1:], len(codes)] if len(codes) else starts
    cluster, group_id, topic, partition, ts, committed, lag = (
        observations[c].tolist() for c in (*keys, "ts", "committed", "lag")
    )
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        group_key, where = (cluster[start], group_id[start]), (topic[start], int(partition[start]))
        track = groups.setdefault(group_key, {}).setdefault(where, PartitionTracker())
        observed = zip(ts[start:end], committed[start:end], lag[start:end], strict=True)
        partition_commits = commits.pop((*group_key, *where), [])
        evidence = partial(rows.evidence, group_key, where)
        limits = rows.limits_of(group_key[0], where[0])
        for report in fold_observations(
            track, thresholds_for(group_key), observed, partition_commits, evidence, limits
        ):
            rows.add_partition(group_key, where, report, track)
    for (cluster_name, group, topic_name, number), partition_commits in commits.items():  # no observation here
        track = groups.setdefault((cluster_name, group), {}).setdefault((topic_name, number), PartitionTracker())
        for commit_ts, offset in partition_commits:
            track.commit(commit_ts, offset, thresholds_for((cluster_name, group)))
    rows.add_late_readings(groups, thresholds_for)
    rows.judge_at_log_readings(groups, thresholds_for)
    return rows


def _last_judgement(
    groups: dict[tuple[str, str], GroupTracks],
    lag_config: LagConfig,
    rows: _Rows,
    thresholds_for: ThresholdsOf,
    group_key: tuple[str, str],
) -> Row | None:
    """The group's ordinary group_status row as of its newest observation (what was last known;
    None when nothing was judged yet)."""
    tracks = groups[group_key]
    newest = max(track.last_ts_ms for track in tracks.values())
    return _group_row(group_key, tracks, newest - newest % PERIOD_MS, lag_config, rows, thresholds_for(group_key))


def _group_type(
    memberships: dict[tuple[str, str], membership.GroupMembership], group_key: tuple[str, str]
) -> str | None:
    owned = memberships.get(group_key)
    return owned.group_type if owned is not None else None


def _replaced(table: str, rows: list[Row], newer: list[Row]) -> list[Row]:
    """``rows`` without those that ``newer`` (later in the batch) rewrites, then ``newer``: one row
    per key and batch, since rows of one batch share a version and newest-wins could not choose."""
    key = itemgetter(*lake.table(table).key)
    replaced = {key(row) for row in newer}
    return [row for row in rows if key(row) not in replaced] + newer


#: (cluster, group) → its Thresholds.
ThresholdsOf = Callable[[tuple[str, str]], Thresholds]


def _thresholds_of(lag_config: LagConfig, cluster_lag: Mapping[str, Mapping[str, float]]) -> ThresholdsOf:
    """Each group's Thresholds, built once per batch: defaults ← cluster ← group."""

    @cache
    def thresholds_for(group_key: tuple[str, str]) -> Thresholds:
        cluster, group = group_key
        return Thresholds.for_group(lag_config, group, cluster_lag.get(cluster))

    return thresholds_for


class _Rows:
    """The lag_1m rows of a batch, each partition's newest report and each group's newest window."""

    def __init__(
        self,
        memberships: dict[tuple[str, str], membership.GroupMembership],
        readings: membership.BatchReadings,
        events: broker_events.BrokerEvents | None,
        window_ms: int,
        settings: retention.TopicSettings | None = None,
    ) -> None:
        self.memberships = memberships
        self.readings = readings
        self.partition_rows: list[Row] = []
        self.broker_clause: Callable[[str, int], str | None] = (
            cache(partial(_broker_clause, events, window_ms)) if events is not None else _nothing
        )
        #: (cluster, topic) → its retention settings (None: not read), looked up once per batch.
        self.limits_of: Callable[[str, str], retention.TopicLimits | None] = (
            cache(settings.limits) if settings is not None else _nothing
        )
        self.newest_period: dict[tuple[str, str], int] = {}
        self.reports: dict[tuple[str, str, str, int], PartitionReport] = {}
        #: Groups judged as of a commit-log reading newer than their newest observation: its ts.
        self.judged_at: dict[tuple[str, str], int] = {}

    def evidence(self, group_key: tuple[str, str], where: tuple[str, int], ts_ms: int) -> Membership | None:
        """The membership reading of the cycle at ts_ms, for the judgement (None: no reading)."""
        owned = self.memberships.get(group_key)
        return owned.evidence(where, ts_ms, self.readings, group_key) if owned is not None else None

    def add_partition(
        self, group_key: tuple[str, str], where: tuple[str, int], report: PartitionReport, track: PartitionTracker
    ) -> None:
        """The report's lag_1m row (owner changes counted from where the partition's previous minute stopped)."""
        period = report.ts_ms - report.ts_ms % PERIOD_MS
        owned = self.memberships.get(group_key)
        owner = owned.owner_at(where, report.ts_ms, self.readings, group_key) if owned is not None else None
        changes_from = changes_from_ms(track, report.ts_ms)
        changes = owned.owner_changes(where, changes_from, report.ts_ms) if owned is not None else 0
        group_type = owned.group_type if owned is not None else None
        pending = owned.pending_at(where, report.ts_ms, self.readings, group_key) if owned is not None else None
        self.partition_rows.append(
            _partition_row(group_key, where, report, owner or (None, None, None), changes, group_type, pending)
        )
        self.newest_period[group_key] = max(self.newest_period.get(group_key, period), period)
        self.reports[(*group_key, *where)] = report

    def add_late_readings(self, groups: dict[tuple[str, str], GroupTracks], thresholds_for: ThresholdsOf) -> None:
        """Rows again where this batch brought the readings of a cycle whose observation an
        earlier batch already wrote: the partition's owner, or the group's state and members."""
        for group_key, wheres in self.readings.touched_partitions.items():
            for where, stamps in wheres.items():
                track = groups.get(group_key, {}).get(where)
                if track is not None and (*group_key, *where) not in self.reports and track.last_ts_ms in stamps:
                    evidence = self.evidence(group_key, where, track.last_ts_ms)
                    report = track.report(thresholds_for(group_key), evidence, self.limits_of(group_key[0], where[0]))
                    self.add_partition(group_key, where, report, track)
        for group_key, stamps in self.readings.touched_groups.items():
            tracks = groups.get(group_key)
            if tracks and group_key not in self.newest_period:
                newest = max(track.last_ts_ms for track in tracks.values())
                if newest in stamps:
                    self.newest_period[group_key] = newest - newest % PERIOD_MS

    def judge_at_log_readings(self, groups: dict[tuple[str, str], GroupTracks], thresholds_for: ThresholdsOf) -> None:
        """A group whose commit-log reading (a member left, the group went Empty) is newer than its
        newest observation is judged again as of that reading, and its group_status row written
        with it: the change shows now, not at the next collector cycle. Its lag_1m rows stay
        those of the observations (their owner is still their own cycle's)."""
        for group_key, log_ts in self.readings.log_readings.items():
            tracks = groups.get(group_key)
            if not tracks or log_ts <= max(track.last_ts_ms for track in tracks.values()):
                continue
            self.judged_at[group_key] = log_ts
            self.newest_period[group_key] = log_ts - log_ts % PERIOD_MS
            thresholds = thresholds_for(group_key)
            for where, track in tracks.items():
                if track.window_ts:
                    evidence = self.evidence(group_key, where, log_ts)
                    limits = self.limits_of(group_key[0], where[0])
                    self.reports[(*group_key, *where)] = track.report(thresholds, evidence, limits)


def _broker_clause(events: broker_events.BrokerEvents, window_ms: int, cluster: str, end_ms: int) -> str | None:
    return broker_events.window_clause(events, cluster, end_ms, window_ms)


def _nothing(_cluster: str, _key: object) -> None:
    """A per-batch lookup (broker clause, topic limits) for a bucket that has no such state."""
    return None


def _columns(table: str, rows: list[Row]) -> dict[str, np.ndarray]:
    """Rows → the table's column arrays (object arrays; rollups.py types them), times stay epoch ms.

    By name against the lake contract: a declared column a row lacks raises (lake.row_columns).
    """
    if not rows:
        return {}
    return {name: np.array(values, dtype=object) for name, values in lake.row_columns(table, rows).items()}


def _fold_partition_readings(
    samples: pd.DataFrame, metrics: np.ndarray, groups: dict[tuple[str, str], GroupTracks]
) -> None:
    """Each partition keeps its newest log start and size (before the batch's observations are judged)."""
    if samples.empty:
        return
    labels = series_labels(samples["series_key"].to_numpy(), PAIR_LABELS)
    columns = (*(labels[name] for name in PAIR_LABELS), samples["ts"].to_numpy(np.int64), samples["value"].to_numpy())
    for cluster, group, topic, partition, ts, value, metric in zip(*columns, metrics, strict=True):
        track = groups.setdefault((cluster, group), {}).setdefault((topic, int(partition)), PartitionTracker())
        if metric == GROUP_SIZE_METRIC:
            track.see_size(int(ts), round(value))
        elif metric == GROUP_LOG_START_METRIC:
            track.see_log_start(int(ts), round(value))


def _commits_by_partition(rows: pd.DataFrame) -> dict[tuple[str, str, str, int], list[tuple[int, int]]]:
    """(cluster, group, topic, partition) → its commits (ts, offset) in time order."""
    commits: dict[tuple[str, str, str, int], list[tuple[int, int]]] = {}
    columns = (rows[name].tolist() for name in (*PAIR_LABELS, "ts", "offset"))
    for cluster, group, topic, partition, ts, offset in zip(*columns, strict=True):
        commits.setdefault((cluster, group, topic, int(partition)), []).append((ts, offset))
    return commits


def changes_from_ms(track: PartitionTracker, ts_ms: int) -> int:
    """Where the owner changes of the row reported at ts_ms start counting: just after the
    partition's newest observation before that minute, where the previous minute's row stopped.
    A change read between two minutes' observations (a commit-log reading at its record's time)
    then counts in the later row instead of in neither."""
    period = ts_ms - ts_ms % PERIOD_MS
    before = bisect_left(track.window_ts, period)
    return track.window_ts[before - 1] + 1 if before else period


def fold_observations(
    track: PartitionTracker,
    thresholds: Thresholds,
    observations: Iterable[tuple[int, int, int]],
    commits: Sequence[tuple[int, int]] = (),
    evidence: Callable[[int], Membership | None] = lambda _ts: None,
    limits: retention.TopicLimits | None = None,
) -> list[PartitionReport]:
    """Observe in time order, each commit taken before the first observation after it; one
    report per 1-minute window, taken at its newest observation with that cycle's membership
    (and the topic's retention ``limits``)."""
    reports: list[PartitionReport] = []
    pending = False
    next_commit = 0
    for ts, committed, lag in observations:
        if ts <= track.last_ts_ms:
            continue  # duplicate or out of order: see PartitionTracker.observe
        if pending and ts - ts % PERIOD_MS != track.period_start_ms:
            reports.append(track.report(thresholds, evidence(track.last_ts_ms), limits))
        while next_commit < len(commits) and commits[next_commit][0] <= ts:
            track.commit(*commits[next_commit], thresholds)
            next_commit += 1
        pending = track.observe(ts, committed, lag, thresholds, PERIOD_MS)
    for commit_ts, offset in commits[next_commit:]:
        track.commit(commit_ts, offset, thresholds)
    if pending:
        reports.append(track.report(thresholds, evidence(track.last_ts_ms), limits))
    return reports


def _partition_row(
    group_key: tuple[str, str],
    where: tuple[str, int],
    report: PartitionReport,
    owner: membership.Owner,
    changes: int,
    group_type: str | None,
    pending: str | None,
) -> Row:
    """A lag_1m row (times in epoch ms): the report, and the partition's owner (and pending owner) in its cycle.

    The report's columns are taken by name (REPORT_COLUMNS), so a column it measures needs no
    line here: only the row's identity and what the membership adds are spelled out.
    """
    period = report.ts_ms - report.ts_ms % PERIOD_MS
    row = {
        "cluster": group_key[0],
        "window_start": period,
        "window_end": period + PERIOD_MS,
        "group_id": group_key[1],
        "topic": where[0],
        "partition": where[1],
        "owner_member_id": owner[0],
        "owner_client_id": owner[1],
        "owner_host": owner[2],
        "owner_changes": changes,
        "owner_pending": pending,
        "group_type": group_type,
    }
    row.update(zip(REPORT_COLUMNS, _report_values(report), strict=True))
    return row


def _group_row(
    group_key: tuple[str, str],
    tracks: GroupTracks,
    period: int,
    lag_config: LagConfig,
    rows: _Rows,
    thresholds: Thresholds,
) -> Row | None:
    """A group_status row: every partition seen within one window of the group's newest observation.

    Partitions observed in this batch use the report just made; the others are re-judged
    from their state (so a partition that went quiet still ages towards STOP). None while no
    partition of the window has a report to summarize: a group status is only ever its
    partitions' verdicts, so there is nothing to write yet.
    """
    newest = max(max(track.last_ts_ms for track in tracks.values()), rows.judged_at.get(group_key, -1))
    recent_ms = newest - lag_config.window_ms
    owned = rows.memberships.get(group_key)
    reports = [
        (*where, rows.reports.get((*group_key, *where)) or _rejudge(rows, group_key, where, track, thresholds))
        for where, track in tracks.items()
        if track.window_ts and track.last_ts_ms >= recent_ms  # only commits or waiting halves: no report yet
    ]
    if not reports:
        return None
    rebalances = owned.rebalances(recent_ms, newest) if owned is not None else 0
    storm = _storm(owned, newest, lag_config)
    facts = GroupFacts(
        partial(_owner, rows, group_key, tracks),
        rebalances,
        lag_config.window_s,
        partial(rows.broker_clause, group_key[0], newest),
        reasons.rebalance_storm(storm, lag_config.rebalance_storm_window_s) if storm else None,
    )
    summary = summarize_group(reports, facts)
    state, members = owned.group_at(newest, rows.readings, group_key) if owned is not None else (None, None)
    row = {
        "cluster": group_key[0],
        "group_id": group_key[1],
        "group_state": state,
        "members": members,
        "rebalances": rebalances,
        "rebalancing_s": owned.rebalancing_s(recent_ms, newest) if owned is not None else None,
        "storm_rebalances": storm,  # the count the reason names, so a rule can alert on the storm
        "group_type": owned.group_type if owned is not None else None,
        "group_epoch": owned.group_epoch if owned is not None else None,
        "window_start": period,
        "updated_at": newest,
    }
    row.update(zip(_SUMMARY_COLUMNS, _summary_values(summary), strict=True))  # by name, like _partition_row
    return row


def _storm(owned: membership.GroupMembership | None, newest: int, lag_config: LagConfig) -> int:
    """The rebalances within lag.rebalance_storm_window_s when there are at least lag.rebalance_storm_count."""
    if owned is None:
        return 0
    count = owned.rebalances(newest - lag_config.rebalance_storm_window_ms, newest)
    return count if count >= lag_config.rebalance_storm_count else 0


def _rejudge(
    rows: _Rows, group_key: tuple[str, str], where: tuple[str, int], track: PartitionTracker, thresholds: Thresholds
) -> PartitionReport:
    """A partition not observed in this batch, judged again as of its newest observation."""
    return track.report(
        thresholds, rows.evidence(group_key, where, track.last_ts_ms), rows.limits_of(group_key[0], where[0])
    )


def _owner(rows: _Rows, group_key: tuple[str, str], tracks: GroupTracks, where: tuple[str, int]) -> str | None:
    """The partition's owner in the cycle of its newest observation, as the group's reason names it."""
    track = tracks.get(where)
    evidence = rows.evidence(group_key, where, track.last_ts_ms) if track is not None and track.window_ts else None
    return evidence.owner if evidence is not None else None


def _forget_silent(
    groups: dict[tuple[str, str], GroupTracks],
    memberships: dict[tuple[str, str], membership.GroupMembership],
    watermark_ms: int,
    lag_config: LagConfig,
    unreachable_clusters: set[str],
) -> None:
    """Drop partitions not observed (or read) for two windows behind the watermark, then empty
    groups; a group of an unreachable cluster stays (it is ERR, not gone)."""
    oldest_ms = watermark_ms - 2 * lag_config.window_ms
    membership.forget_silent(memberships, oldest_ms)
    for group_key in list(groups):
        if group_key[0] in unreachable_clusters:
            continue
        tracks = groups[group_key]
        for where in [w for w, track in tracks.items() if track.last_seen_ms < oldest_ms]:
            del tracks[where]
        if not tracks:
            del groups[group_key]
