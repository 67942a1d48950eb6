"""Lag analytics in the stream: lag_1m rows per group-partition and group_status rows per group.

Input: the admin collector's `committed_offset` and `consumer_lag` samples (source 'admin',
labels group_id/topic/partition). The two samples of one partition from one collector cycle
share a ts; paired, they give committed offset, lag and so the log-end offset at that moment
(end = committed + lag, both read in the same cycle by the admin collector). When a micro-batch
ends between the two, the first half waits in its partition's state for the other (bounded).
`log_end_offset` samples are per partition, not per group, and need no pairing: the end offset
is already implied here. The log start comes per group too (`group_log_start_offset`, read in
the cycle of the committed offset): each partition keeps its newest one, for LOSS and the
retention margin.
Where the collector reads the commit log, every commit also arrives as a `committed_offset`
sample with source 'commitlog' and ts = its commit time: those are not observations but the
partition's commits (``PartitionTracker.commit``), folded in time order with the observations.

State is kept per (cluster, group) — all partitions of a group in one place, so a group's
status is computed from every partition's newest state even when one micro-batch carries only
some of them. Groups are hashed into ``STATE_BUCKETS`` buckets (one Python call per bucket,
not per group: see windows.py for why); a bucket's state is a pickled dict of
:class:`~spark_jobs.lag_status.PartitionTracker` state tuples keyed by group, then
(topic, partition) (:func:`encode_groups` / :func:`decode_groups`).
The judgement itself lives in ``lag_status.py``.

Membership (``membership.py``) lives in the same bucket: the owner of each partition, the
group's state, member count and rebalances join the rows here (owner_* columns of lag_1m;
group_state, members and rebalances of group_status), and each report is judged with its
cycle's membership as evidence (``_Rows.evidence``; the rules are in lag_status.py).

The rows come out of the job's one stateful operator (``rollups.py``) as one Arrow blob per
table; in foreachBatch, ``rollups.decode_table`` opens them (every lake column but `version`).
A lag sample's own metric windows (``windows.py``) are kept in its group's bucket as well.

Rows emitted per batch: one lag_1m row per group-partition and 1-minute window that received
an observation (values as of the newest observation in that window), and one group_status row
per group touched, as of its newest window (window_start = that minute, updated_at = the newest
observation's time, so a status is never stamped in the future).
A group-partition not observed for ``2 × lag.window_s`` leaves the state (topic deleted, group
no longer committing to it); until then it still counts in its group's status, so an empty
group that stopped consuming keeps being evaluated.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from lagwatch.config import LagConfig
from lagwatch.vocabulary import GROUP_LOG_START_METRIC
from spark_jobs import membership
from spark_jobs.lag_status import (
    GroupFacts,
    Membership,
    PartitionReport,
    PartitionTracker,
    Thresholds,
    summarize_group,
)
from spark_jobs.windows import Columns, series_labels

log = logging.getLogger(__name__)

PERIOD_MS = 60_000
LAG_METRICS = ("committed_offset", "consumer_lag", GROUP_LOG_START_METRIC)
#: Sources of lag samples: the cycle's observations, and the commit log's commits.
OBSERVATION_SOURCE, COMMIT_SOURCE = "admin", "commitlog"
LAG_SOURCES = (OBSERVATION_SOURCE, COMMIT_SOURCE)

LAG_1M_COLUMNS: tuple[str, ...] = (
    "cluster",
    "window_start",
    "window_end",
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "end_offset",
    "lag",
    "lag_max",
    "consume_rate",
    "produce_rate",
    "time_lag_s",
    "time_lag_method",
    "eta_s",
    "rate_span_s",
    "retention_margin",
    "retention_margin_s",
    "status",
    "reason",
    "rule",
    "owner_member_id",
    "owner_client_id",
    "owner_host",
    "owner_changes",
)
GROUP_STATUS_COLUMNS: tuple[str, ...] = (
    "cluster",
    "group_id",
    "status",
    "reason",
    "rule",
    "total_lag",
    "max_lag",
    "max_time_lag_s",
    "partitions",
    "topics",
    "group_state",
    "members",
    "rebalances",
    "window_start",
    "updated_at",
)
GroupTracks = dict[tuple[str, int], PartitionTracker]
#: The labels of a paired observation (from the committed-offset sample's series key).
_PAIR_LABELS: tuple[str, ...] = ("cluster", "group_id", "topic", "partition")
_EMPTY_MEASURES = {name: np.empty(0, np.int64) for name in ("ts", "pkey", "committed", "lag")}


def encode_groups(groups: dict[tuple[str, str], GroupTracks]) -> bytes:
    plain = {key: {where: track.to_state() for where, track in tracks.items()} for key, tracks in groups.items()}
    return pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL)


def decode_groups(blob: bytes) -> dict[tuple[str, str], GroupTracks]:
    plain = pickle.loads(blob)
    return {
        key: {where: PartitionTracker.from_state(saved) for where, saved in tracks.items()}
        for key, tracks in plain.items()
    }


def split_commits(samples: pd.DataFrame) -> tuple[pd.DataFrame, Columns, pd.DataFrame]:
    """(cycle samples to pair, their labels, commit-log commits as rows of _PAIR_LABELS, ts,
    pkey, offset sorted by (pkey, ts)). The labels are decoded once, here, for both."""
    labels = series_labels(samples["series_key"].to_numpy(), ("source", "metric", *_PAIR_LABELS))
    is_commit = labels["source"] == COMMIT_SOURCE
    if not is_commit.any():
        return samples, labels, pd.DataFrame(columns=[*_PAIR_LABELS, "ts", "pkey", "offset"])
    commits = pd.DataFrame({name: labels[name][is_commit] for name in _PAIR_LABELS})
    commits["ts"] = samples["ts"].to_numpy(np.int64)[is_commit]
    commits["pkey"] = samples["pkey"].to_numpy(np.int64)[is_commit]
    commits["offset"] = np.round(samples["value"].to_numpy(np.float64)[is_commit]).astype(np.int64)
    commits = commits.sort_values(["pkey", "ts"], kind="stable", ignore_index=True)
    cycle_labels = {name: values[~is_commit] for name, values in labels.items()}
    return samples[~is_commit], cycle_labels, commits


def pair_observations(samples: pd.DataFrame, labels: Columns | None = None) -> pd.DataFrame:
    """committed_offset + consumer_lag samples of the same partition and ts → one observation row.

    A sample without its partner in this batch is not an observation yet: lag must come from
    the same cycle as the committed offset (:func:`pair_across_batches` keeps it waiting).
    ``pkey`` (a hash of cluster, group, topic, partition, computed by Spark) keeps this
    numeric: sorting and comparing strings per sample cost more than the whole lag judgement.
    Result: one row per observation, sorted by (pkey, ts).
    """
    return pair_in_batch(samples, labels)[0]


def pair_in_batch(samples: pd.DataFrame, labels: Columns | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(observations as :func:`pair_observations` returns them, the unpaired halves: rows of
    _PAIR_LABELS, ts, pkey, is_lag, value)."""
    if samples.empty:  # a batch of membership samples only
        empty = pd.DataFrame({name: np.empty(0, object) for name in _PAIR_LABELS} | _EMPTY_MEASURES)
        return empty, _halves(empty, np.empty(0, int), labels or {}, np.empty(0, bool))
    key = key_all = samples["pkey"].to_numpy(np.int64)
    ts = ts_all = samples["ts"].to_numpy(np.int64)
    if labels is None:
        labels = series_labels(samples["series_key"].to_numpy(), ("metric", *_PAIR_LABELS))
    is_lag = labels["metric"] == "consumer_lag"
    order = np.lexsort((is_lag, ts, key))
    key, ts, is_lag = key[order], ts[order], is_lag[order]
    same_next = (key[1:] == key[:-1]) & (ts[1:] == ts[:-1])
    last_of_kind = np.r_[~(same_next & (is_lag[1:] == is_lag[:-1])), True]  # duplicates: keep the last
    order, key, ts, is_lag = order[last_of_kind], key[last_of_kind], ts[last_of_kind], is_lag[last_of_kind]
    pair_start = np.flatnonzero((key[1:] == key[:-1]) & (ts[1:] == ts[:-1]) & ~is_lag[:-1] & is_lag[1:])
    in_pair = np.zeros(len(order), bool)
    in_pair[pair_start], in_pair[pair_start + 1] = True, True
    halves = _halves(samples, order[~in_pair], labels, is_lag[~in_pair])
    committed_rows, lag_rows = order[pair_start], order[pair_start + 1]
    values = samples["value"].to_numpy(np.float64)
    paired = pd.DataFrame({name: labels[name][committed_rows] for name in _PAIR_LABELS})
    paired["ts"] = ts_all[committed_rows]
    paired["pkey"] = key_all[committed_rows]
    paired["committed"] = np.round(values[committed_rows]).astype(np.int64)
    paired["lag"] = np.round(np.clip(values[lag_rows], 0, None)).astype(np.int64)
    return paired, halves


def _halves(samples: pd.DataFrame, rows: np.ndarray, labels: Columns, is_lag: np.ndarray) -> pd.DataFrame:
    halves = pd.DataFrame({name: labels[name][rows] if len(rows) else np.empty(0, object) for name in _PAIR_LABELS})
    for name, dtype in (("ts", np.int64), ("pkey", np.int64), ("value", np.float64)):
        halves[name] = samples[name].to_numpy(dtype)[rows] if len(rows) else np.empty(0, dtype)
    halves["is_lag"] = is_lag
    return halves


def pair_across_batches(
    observations: pd.DataFrame, halves: pd.DataFrame, groups: dict[tuple[str, str], GroupTracks], keep_ms: int
) -> pd.DataFrame:
    """Pair this batch's unpaired halves with halves waiting in their partition's state; keep the rest waiting.

    Why: a micro-batch boundary (max_rows_per_batch) can fall between the two samples of one
    collector cycle; dropping them lost that cycle's observation.
    """
    late = []
    for cluster, group, topic, partition, ts, pkey, value, is_lag in halves[
        [*_PAIR_LABELS, "ts", "pkey", "value", "is_lag"]
    ].itertuples(index=False):
        track = groups.setdefault((cluster, group), {}).setdefault((topic, int(partition)), PartitionTracker())
        partner = track.take_half(ts, not is_lag)
        if partner is None:
            track.wait_half(ts, bool(is_lag), value, keep_ms)
            continue
        committed, lag = (partner, value) if is_lag else (value, partner)
        late.append((cluster, group, topic, partition, ts, pkey, round(committed), max(round(lag), 0)))
    if not late:
        return observations
    late_rows = pd.DataFrame(late, columns=[*_PAIR_LABELS, "ts", "pkey", "committed", "lag"])
    both = pd.concat([observations, late_rows], ignore_index=True)
    return both.sort_values(["pkey", "ts"], kind="stable", ignore_index=True)


def update_lag(
    samples: pd.DataFrame,
    groups: dict[tuple[str, str], GroupTracks],
    memberships: dict[tuple[str, str], membership.GroupMembership],
    lag_config: LagConfig,
    watermark_ms: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Fold a batch into the groups' trackers and membership (in place); return (lag_1m, group_status) columns."""
    metric = series_labels(samples["series_key"].to_numpy(), ("metric",))["metric"]
    is_start = metric == GROUP_LOG_START_METRIC  # per partition state, not a membership reading
    is_offset = np.isin(metric, LAG_METRICS) & ~is_start
    keep_ms = max(int(lag_config.window_s * 1000), PERIOD_MS)
    readings = membership.fold_readings(samples[~(is_offset | is_start)], memberships, keep_ms)
    cycle_samples, cycle_labels, commit_rows = split_commits(samples[is_offset])
    observations, halves = pair_in_batch(cycle_samples, cycle_labels)
    observations = pair_across_batches(observations, halves, groups, keep_ms)
    commits = _commits_by_partition(commit_rows)
    _fold_log_starts(samples[is_start], groups)
    keys = ["cluster", "group_id", "topic", "partition"]
    codes = observations["pkey"].to_numpy(np.int64)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if len(codes) else np.empty(0, int)
    ends = np.r_[starts[1:], len(codes)] if len(codes) else starts
    cluster, group_id, topic, partition, ts, committed, lag = (
        observations[c].tolist() for c in (*keys, "ts", "committed", "lag")
    )
    rows = _Rows(memberships, readings)
    thresholds_of: dict[str, Thresholds] = {}

    def thresholds_for(group: str) -> Thresholds:
        return thresholds_of.get(group) or thresholds_of.setdefault(group, Thresholds.for_group(lag_config, group))

    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        group_key, where = (cluster[start], group_id[start]), (topic[start], int(partition[start]))
        track = groups.setdefault(group_key, {}).setdefault(where, PartitionTracker())
        observed = zip(ts[start:end], committed[start:end], lag[start:end], strict=True)
        partition_commits = commits.pop((*group_key, *where), [])
        evidence = partial(rows.evidence, group_key, where)
        for report in fold_observations(track, thresholds_for(group_key[1]), observed, partition_commits, evidence):
            rows.add_partition(group_key, where, report)
    for (cluster_name, group, topic_name, number), partition_commits in commits.items():  # no observation here
        track = groups.setdefault((cluster_name, group), {}).setdefault((topic_name, number), PartitionTracker())
        for commit_ts, offset in partition_commits:
            track.commit(commit_ts, offset, thresholds_for(group))
    rows.add_late_readings(groups, thresholds_for)
    group_rows = [_group_row(key, groups[key], period, lag_config, rows) for key, period in rows.newest_period.items()]
    _forget_silent(groups, memberships, watermark_ms, lag_config)
    return _columns(rows.partition_rows, LAG_1M_COLUMNS), _columns(group_rows, GROUP_STATUS_COLUMNS)


class _Rows:
    """The lag_1m rows of a batch, each partition's newest report and each group's newest window."""

    def __init__(
        self, memberships: dict[tuple[str, str], membership.GroupMembership], readings: membership.BatchReadings
    ) -> None:
        self.memberships = memberships
        self.readings = readings
        self.partition_rows: list[tuple[Any, ...]] = []
        self.newest_period: dict[tuple[str, str], int] = {}
        self.reports: dict[tuple[str, str, str, int], PartitionReport] = {}

    def evidence(self, group_key: tuple[str, str], where: tuple[str, int], ts_ms: int) -> Membership | None:
        """The membership reading of the cycle at ts_ms, for the judgement (None: no reading)."""
        owned = self.memberships.get(group_key)
        return owned.evidence(where, ts_ms, self.readings, group_key) if owned is not None else None

    def add_partition(self, group_key: tuple[str, str], where: tuple[str, int], report: PartitionReport) -> None:
        period = report.ts_ms - report.ts_ms % PERIOD_MS
        owned = self.memberships.get(group_key)
        owner = owned.owner_at(where, report.ts_ms, self.readings, group_key) if owned is not None else None
        changes = owned.owner_changes(where, period, report.ts_ms) if owned is not None else 0
        self.partition_rows.append((*_partition_row(group_key, where, report), *(owner or (None,) * 3), changes))
        self.newest_period[group_key] = max(self.newest_period.get(group_key, period), period)
        self.reports[(*group_key, *where)] = report

    def add_late_readings(
        self, groups: dict[tuple[str, str], GroupTracks], thresholds_for: Callable[[str], Thresholds]
    ) -> None:
        """Rows again where this batch brought the readings of a cycle whose observation an
        earlier batch already wrote: the partition's owner, or the group's state and members."""
        for group_key, wheres in self.readings.touched_partitions.items():
            for where, stamps in wheres.items():
                track = groups.get(group_key, {}).get(where)
                if track is not None and (*group_key, *where) not in self.reports and track.last_ts_ms in stamps:
                    evidence = self.evidence(group_key, where, track.last_ts_ms)
                    self.add_partition(group_key, where, track.report(thresholds_for(group_key[1]), evidence))
        for group_key, stamps in self.readings.touched_groups.items():
            tracks = groups.get(group_key)
            if tracks and group_key not in self.newest_period:
                newest = max(track.last_ts_ms for track in tracks.values())
                if newest in stamps:
                    self.newest_period[group_key] = newest - newest % PERIOD_MS


def _columns(rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Row tuples → column arrays (object arrays; rollups.py types them), times stay epoch ms."""
    if not rows:
        return {}
    return {name: np.array(values, dtype=object) for name, values in zip(names, zip(*rows, strict=True), strict=True)}


def _fold_log_starts(samples: pd.DataFrame, groups: dict[tuple[str, str], GroupTracks]) -> None:
    """Each partition keeps its newest log start (before the batch's observations are judged)."""
    if samples.empty:
        return
    labels = series_labels(samples["series_key"].to_numpy(), _PAIR_LABELS)
    columns = (*(labels[name] for name in _PAIR_LABELS), samples["ts"].to_numpy(np.int64), samples["value"].to_numpy())
    for cluster, group, topic, partition, ts, start in zip(*columns, strict=True):
        track = groups.setdefault((cluster, group), {}).setdefault((topic, int(partition)), PartitionTracker())
        track.see_log_start(int(ts), round(start))


def _commits_by_partition(rows: pd.DataFrame) -> dict[tuple[str, str, str, int], list[tuple[int, int]]]:
    """(cluster, group, topic, partition) → its commits (ts, offset) in time order."""
    commits: dict[tuple[str, str, str, int], list[tuple[int, int]]] = {}
    columns = (rows[name].tolist() for name in (*_PAIR_LABELS, "ts", "offset"))
    for cluster, group, topic, partition, ts, offset in zip(*columns, strict=True):
        commits.setdefault((cluster, group, topic, int(partition)), []).append((ts, offset))
    return commits


def fold_observations(
    track: PartitionTracker,
    thresholds: Thresholds,
    observations: Iterable[tuple[int, int, int]],
    commits: Sequence[tuple[int, int]] = (),
    evidence: Callable[[int], Membership | None] = lambda _ts: None,
) -> list[PartitionReport]:
    """Observe in time order, each commit taken before the first observation after it; one
    report per 1-minute window, taken at its newest observation with that cycle's membership."""
    reports: list[PartitionReport] = []
    pending = False
    next_commit = 0
    for ts, committed, lag in observations:
        if ts <= track.last_ts_ms:
            continue  # duplicate or out of order: see PartitionTracker.observe
        if pending and ts - ts % PERIOD_MS != track.period_start_ms:
            reports.append(track.report(thresholds, evidence(track.last_ts_ms)))
        while next_commit < len(commits) and commits[next_commit][0] <= ts:
            track.commit(*commits[next_commit], thresholds)
            next_commit += 1
        pending = track.observe(ts, committed, lag, thresholds, PERIOD_MS)
    for commit_ts, offset in commits[next_commit:]:
        track.commit(commit_ts, offset, thresholds)
    if pending:
        reports.append(track.report(thresholds, evidence(track.last_ts_ms)))
    return reports


def _partition_row(group_key: tuple[str, str], where: tuple[str, int], report: PartitionReport) -> tuple[Any, ...]:
    """A lag_1m row's lag columns in LAG_1M_COLUMNS order (times in epoch ms); the owner's follow."""
    period = report.ts_ms - report.ts_ms % PERIOD_MS
    return (
        group_key[0],
        period,
        period + PERIOD_MS,
        group_key[1],
        where[0],
        where[1],
        report.committed_offset,
        report.end_offset,
        report.lag,
        report.lag_max,
        report.consume_rate,
        report.produce_rate,
        report.time_lag_s,
        report.time_lag_method,
        report.eta_s,
        report.rate_span_s,
        report.retention_margin,
        report.retention_margin_s,
        report.status,
        report.reason,
        report.rule,
    )


def _group_row(
    group_key: tuple[str, str], tracks: GroupTracks, period: int, lag_config: LagConfig, rows: _Rows
) -> tuple[Any, ...]:
    """A group_status row: every partition seen within one window of the group's newest observation.

    Partitions observed in this batch use the report just made; the others are re-judged
    from their state (so a partition that went quiet still ages towards STOP).
    """
    thresholds = Thresholds.for_group(lag_config, group_key[1])
    newest = max(track.last_ts_ms for track in tracks.values())
    recent_ms = newest - int(lag_config.window_s * 1000)
    owned = rows.memberships.get(group_key)
    reports = [
        (*where, rows.reports.get((*group_key, *where)) or _rejudge(rows, group_key, where, track, thresholds))
        for where, track in tracks.items()
        if track.window_ts and track.last_ts_ms >= recent_ms  # only commits or waiting halves: no report yet
    ]
    rebalances = owned.rebalances(recent_ms, newest) if owned is not None else 0
    facts = GroupFacts(partial(_owner, rows, group_key, tracks), rebalances, lag_config.window_s)
    summary = summarize_group(reports, facts)
    state, members = owned.group_at(newest, rows.readings, group_key) if owned is not None else (None, None)
    return (
        group_key[0],
        group_key[1],
        summary.status,
        summary.reason,
        summary.rule,
        summary.total_lag,
        summary.max_lag,
        summary.max_time_lag_s,
        summary.partitions,
        summary.topics,
        state,
        members,
        rebalances,
        period,
        newest,
    )


def _rejudge(
    rows: _Rows, group_key: tuple[str, str], where: tuple[str, int], track: PartitionTracker, thresholds: Thresholds
) -> PartitionReport:
    """A partition not observed in this batch, judged again as of its newest observation."""
    return track.report(thresholds, rows.evidence(group_key, where, track.last_ts_ms))


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
) -> None:
    """Drop partitions not observed (or read) for two windows behind the watermark, then empty groups."""
    oldest_ms = watermark_ms - int(2 * lag_config.window_s * 1000)
    membership.forget_silent(memberships, oldest_ms)
    for group_key in list(groups):
        tracks = groups[group_key]
        for where in [w for w, track in tracks.items() if track.last_seen_ms < oldest_ms]:
            del tracks[where]
        if not tracks:
            del groups[group_key]
