"""Which samples are lag samples, and how a cycle's two samples pair into one observation.

The two samples of one partition from one collector cycle (`committed_offset` and
`consumer_lag`, source 'admin') share a ts; paired, they give committed offset, lag and so the
log-end offset at that moment (end = committed + lag, both read in the same cycle). When a
micro-batch ends between the two, the first half waits in its partition's state for the other
(bounded). Where the collector reads the commit log, every commit also arrives as a
`committed_offset` sample with source 'commitlog' and ts = its commit time: those are not
observations but the partition's commits (:func:`split_commits`).

A share group's partition (KIP-932) pairs the same way: its `share_start_offset` stands for the
committed offset and its `share_group_lag` for the lag, so the same tracker and rules judge it
(docs/share-groups.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from lagwatch.vocabulary import (
    GROUP_LOG_START_METRIC,
    GROUP_SIZE_METRIC,
    SHARE_LAG_METRIC,
    SHARE_START_METRIC,
    Source,
)
from spark_jobs.lag.tracker import PartitionTracker
from spark_jobs.windows import Columns, series_labels

LAG_METRICS = (
    "committed_offset",
    "consumer_lag",
    GROUP_LOG_START_METRIC,
    GROUP_SIZE_METRIC,
    SHARE_START_METRIC,
    SHARE_LAG_METRIC,
)
#: Per group-partition readings each partition keeps its newest of (not halves of an observation).
PARTITION_READING_METRICS = (GROUP_LOG_START_METRIC, GROUP_SIZE_METRIC)
#: The lag half of an observation's pair (the other half is its committed or share start offset).
LAG_VALUE_METRICS = ("consumer_lag", SHARE_LAG_METRIC)
#: Sources of lag samples: the cycle's observations, and the commit log's commits.
OBSERVATION_SOURCE, COMMIT_SOURCE = Source.ADMIN.value, Source.COMMITLOG.value
LAG_SOURCES = (OBSERVATION_SOURCE, COMMIT_SOURCE)
GroupTracks = dict[tuple[str, int], PartitionTracker]
#: The labels of a paired observation (from the committed-offset sample's series key).
PAIR_LABELS: tuple[str, ...] = ("cluster", "group_id", "topic", "partition")
_EMPTY_MEASURES = {name: np.empty(0, np.int64) for name in ("ts", "pkey", "committed", "lag")}


def split_commits(samples: pd.DataFrame) -> tuple[pd.DataFrame, Columns, pd.DataFrame]:
    """(cycle samples to pair, their labels, commit-log commits as rows of PAIR_LABELS, ts,
    pkey, offset sorted by (pkey, ts)). The labels are decoded once, here, for both."""
    labels = series_labels(samples["series_key"].to_numpy(), ("source", "metric", *PAIR_LABELS))
    is_commit = labels["source"] == COMMIT_SOURCE
    if not is_commit.any():
        return samples, labels, pd.DataFrame(columns=[*PAIR_LABELS, "ts", "pkey", "offset"])
    commits = pd.DataFrame({name: labels[name][is_commit] for name in PAIR_LABELS})
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
    PAIR_LABELS, ts, pkey, is_lag, value)."""
    if samples.empty:  # a batch of membership samples only
        empty = pd.DataFrame({name: np.empty(0, object) for name in PAIR_LABELS} | _EMPTY_MEASURES)
        return empty, _halves(empty, np.empty(0, int), labels or {}, np.empty(0, bool))
    key = key_all = samples["pkey"].to_numpy(np.int64)
    ts = ts_all = samples["ts"].to_numpy(np.int64)
    if labels is None:
        labels = series_labels(samples["series_key"].to_numpy(), ("metric", *PAIR_LABELS))
    is_lag = np.isin(labels["metric"], LAG_VALUE_METRICS)
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
    paired = pd.DataFrame({name: labels[name][committed_rows] for name in PAIR_LABELS})
    paired["ts"] = ts_all[committed_rows]
    paired["pkey"] = key_all[committed_rows]
    paired["committed"] = np.round(values[committed_rows]).astype(np.int64)
    paired["lag"] = np.round(np.clip(values[lag_rows], 0, None)).astype(np.int64)
    return paired, halves


def _halves(samples: pd.DataFrame, rows: np.ndarray, labels: Columns, is_lag: np.ndarray) -> pd.DataFrame:
    halves = pd.DataFrame({name: labels[name][rows] if len(rows) else np.empty(0, object) for name in PAIR_LABELS})
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
        [*PAIR_LABELS, "ts", "pkey", "value", "is_lag"]
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
    late_rows = pd.DataFrame(late, columns=[*PAIR_LABELS, "ts", "pkey", "committed", "lag"])
    both = pd.concat([observations, late_rows], ignore_index=True)
    return both.sort_values(["pkey", "ts"], kind="stable", ignore_index=True)
