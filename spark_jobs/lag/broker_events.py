"""Broker health events per cluster, so a group's status reason can say the broker had trouble.

Input: the samples of the broker event metrics (``lagwatch.vocabulary.BROKER_EVENTS``), from
the JMX sources (per broker) and the admin source (cluster-wide, no broker label). A group's
lag state lives in its group's bucket and a metric sample in its series' bucket, so
``spark_jobs/route.py`` sends a copy of each of these samples (role BROKER) to every bucket; they are
a handful per broker and cycle. Every bucket keeps the same state from them.

Events:

- a gauge sample above 0 (``ABOVE_ZERO``: under-replicated, under-min-ISR, offline partitions);
- a counter that rose between two samples of its series (``INCREASE``: ISR shrinks, leader
  elections, unclean leader elections); a drop is a restart, and the new value is the increase,
  as the metric windows count it;
- a broker's active controller count going from 0 to 1 (``BECAME_ONE``): the controller moved
  to it.

Every event is a sample (or two of a series) that is also in the lake's ``metrics_*`` tables.
State: each series' newest (ts, value) and each cluster's events of the last ``keep_ms`` (at
most MAX_EVENTS), as plain dicts, lists and tuples (they pickle at C speed). A sample not newer
than its series' newest is a repeat and changes nothing.

:func:`describe` sums up a cluster's events in a time range per broker and metric (the worst
value of a gauge or the sum of a counter's increases, and the first time) as one clause
(phrased by ``reasons.py``); a group_status reason that is not OK ends with the clause of the
lag window up to the row's ``updated_at`` (``group.py``).
"""

from __future__ import annotations

import pickle
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from lagwatch.vocabulary import ABOVE_ZERO, BECAME_ONE, BROKER_EVENTS, INCREASE, BrokerEvent
from spark_jobs.lag import reasons
from spark_jobs.windows import Columns, series_labels

#: Events kept per cluster, newest first: bounds the state when many brokers are in trouble
#: for a long time (a gauge above 0 is one event per sample).
MAX_EVENTS = 4096
#: An event: (ts ms, broker or None for cluster-wide, metric, value or increase, source).
Event = tuple[int, str | None, str, float, str]
_EVENT_BY_METRIC: dict[str, BrokerEvent] = {event.metric: event for event in BROKER_EVENTS}
_METRIC_ORDER: dict[str, int] = {event.metric: rank for rank, event in enumerate(BROKER_EVENTS)}
_LABELS: tuple[str, ...] = ("cluster", "source", "metric", "broker")
_ts = itemgetter(0)


@dataclass(slots=True)
class BrokerEvents:
    """One bucket's broker event state (the same in every bucket)."""

    #: series id -> (newest ts, its value)
    series: dict[int, tuple[int, float]] = field(default_factory=dict)
    #: cluster -> its events, oldest first
    events: dict[str, list[Event]] = field(default_factory=dict)


def encode(state: BrokerEvents) -> bytes:
    return pickle.dumps((state.series, state.events), protocol=pickle.HIGHEST_PROTOCOL)


def decode(blob: bytes) -> BrokerEvents:
    series, events = pickle.loads(blob)
    return BrokerEvents(series, events)


def fold(state: BrokerEvents, samples: pd.DataFrame, keep_ms: int) -> None:
    """Take a batch's broker event samples (columns sid, ts, value, series_key), in time order
    per series; then forget events and series older than ``keep_ms`` before the newest sample."""
    if samples.empty:
        return
    samples = samples.sort_values(["sid", "ts"], kind="stable")
    sid = samples["sid"].to_numpy(np.int64)
    ts = samples["ts"].to_numpy(np.int64)
    value = samples["value"].to_numpy(np.float64)
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    group = np.cumsum(np.r_[True, sid[1:] != sid[:-1]]) - 1
    saved = [state.series.get(key, (np.iinfo(np.int64).min, np.nan)) for key in sid[starts].tolist()]
    saved_ts = np.array([s[0] for s in saved], np.int64)
    saved_value = np.array([s[1] for s in saved], np.float64)
    first = np.zeros(len(sid), bool)
    first[starts] = True
    fresh = (ts > saved_ts[group]) & (first | (ts != np.r_[0, ts[:-1]]))
    sid, ts, value, group = sid[fresh], ts[fresh], value[fresh], group[fresh]
    if not len(sid):
        return
    first = np.r_[True, group[1:] != group[:-1]]
    previous = np.where(first, saved_value[group], np.r_[np.nan, value[:-1]])
    labels = series_labels(samples["series_key"].to_numpy()[starts], _LABELS)
    amount = _amounts(np.array([_EVENT_BY_METRIC[m].rule for m in labels["metric"]], object)[group], value, previous)
    _record(state, labels, group, ts, amount)
    last = np.r_[first[1:], True]  # the last row of each series
    for key, newest, newest_value in zip(sid[last].tolist(), ts[last].tolist(), value[last].tolist(), strict=True):
        state.series[key] = (newest, newest_value)
    _forget(state, int(ts.max()) - keep_ms, set(labels["cluster"].tolist()))


def _amounts(rules: np.ndarray, value: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """Each sample's event amount (the value, the increase, or 1), NaN where it is no event."""
    known = ~np.isnan(previous)
    increase = np.where(value >= previous, value - previous, value)
    amount = np.full(len(value), np.nan)
    above = (rules == ABOVE_ZERO) & (value > 0)
    rose = (rules == INCREASE) & known & (increase > 0)
    became = (rules == BECAME_ONE) & known & (previous == 0) & (value >= 1)
    amount[above] = value[above]
    amount[rose] = increase[rose]
    amount[became] = 1.0
    return amount


def _record(state: BrokerEvents, labels: Columns, group: np.ndarray, ts: np.ndarray, amount: np.ndarray) -> None:
    """Append the events (rows with an amount) to their clusters' lists, in time order."""
    rows = np.flatnonzero(~np.isnan(amount))
    touched: set[str] = set()
    for row in rows.tolist():
        series = group[row]
        cluster = labels["cluster"][series]
        event = (
            int(ts[row]),
            labels["broker"][series],
            labels["metric"][series],
            float(amount[row]),
            labels["source"][series],
        )
        state.events.setdefault(cluster, []).append(event)
        touched.add(cluster)
    for cluster in touched:
        state.events[cluster].sort(key=_ts)


def _forget(state: BrokerEvents, oldest_ms: int, clusters: set[str]) -> None:
    """Drop events of ``clusters`` before ``oldest_ms`` (and past MAX_EVENTS), and series silent since."""
    for cluster in clusters:
        events = state.events.get(cluster)
        if events is None:
            continue
        kept = events[max(bisect_left(events, oldest_ms, key=_ts), len(events) - MAX_EVENTS) :]
        if kept:
            state.events[cluster] = kept
        else:
            del state.events[cluster]
    for key in [key for key, (ts, _) in state.series.items() if ts < oldest_ms]:
        del state.series[key]


def describe(events: list[Event], start_ms: int, end_ms: int) -> str | None:
    """The events in [start_ms, end_ms] as one clause, or None when there were none, e.g.
    ``broker 1: 3 under-replicated partitions at 10:02:15, 2 ISR shrinks from 10:02:15``.

    Per broker (cluster-wide first, then by number) and metric: the worst value of a gauge, the
    sum of a counter's increases, and the first time. Where two sources report the same broker
    (JMX and a Prometheus exporter), the one with the larger figure counts, not their sum.
    """
    found = events[bisect_left(events, start_ms, key=_ts) : bisect_right(events, end_ms, key=_ts)]
    if not found:
        return None
    # (broker, metric, source) -> [worst or sum, least, first ts, samples]
    totals: dict[tuple[str | None, str, str], list[Any]] = {}
    for ts, broker, metric, amount, source in found:
        total = totals.get((broker, metric, source))
        if total is None:
            totals[(broker, metric, source)] = [amount, amount, ts, 1]
            continue
        total[0] = total[0] + amount if _EVENT_BY_METRIC[metric].rule == INCREASE else max(total[0], amount)
        total[1], total[3] = min(total[1], amount), total[3] + 1
    chosen: dict[tuple[str | None, str], list[Any]] = {}
    for (broker, metric, _), total in totals.items():
        best = chosen.get((broker, metric))
        if best is None or (total[0], -total[2]) > (best[0], -best[2]):
            chosen[(broker, metric)] = total
    by_broker: dict[str | None, list[reasons.EventFigures]] = {}
    for broker, metric in sorted(chosen, key=lambda key: (_broker_order(key[0]), _METRIC_ORDER[key[1]])):
        by_broker.setdefault(broker, []).append((_EVENT_BY_METRIC[metric], *chosen[(broker, metric)]))
    return reasons.broker_events(list(by_broker.items()))


def window_clause(state: BrokerEvents, cluster: str, end_ms: int, window_ms: int) -> str | None:
    """The cluster's events of the lag window up to ``end_ms`` as one clause (None: none)."""
    events = state.events.get(cluster)
    return describe(events, end_ms - window_ms, end_ms) if events else None


def _broker_order(broker: str | None) -> tuple[int, int, str]:
    """Cluster-wide first, then brokers by number (2 before 10), then by name."""
    if broker is None:
        return (0, 0, "")
    return (1, int(broker), "") if broker.isascii() and broker.isdigit() else (2, 0, broker)
