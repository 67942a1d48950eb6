"""Every SQL statement the dashboard runs, and the page loaders that bundle them.

Why one module: the pages only render DataFrames, so the benchmark (`bench/bench_dashboard.py`)
times exactly what a page runs by calling the same `PAGE_LOADERS`, and all SQL sits in one
place to review for safety. Rules kept here:

- Every loader opens its own read-only connection (`lagwatch.lake.connect_readonly`) and
  closes it before returning: nothing is held across Streamlit reruns, so the pipeline and
  other readers are never blocked.
- Values from the operator (cluster, group, topic, time range) reach DuckDB only as bound
  parameters (`$name`); the SQL text is constant.
- Queries are shaped for the newest-wins views: a filter on a key column (time, cluster,
  metric, labels) is pushed below the dedupe into the Parquet scan, so "current" values read
  only a short slice at the end of the range instead of deduping seven days. Tables whose key
  lacks the time column are read through their `<table>_since(start)` macro for the same reason.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from lagwatch import lake as lakelib
from lagwatch import vocabulary
from lagwatch.alert_state import RESOLVED, STATE_EVENTS
from lagwatch.lake_queries import newest_rows

if TYPE_CHECKING:
    import duckdb

    from lagwatch.config import Config

#: "Current" values come from this slice at the end of the range (a few collect cycles).
LATEST_LOOKBACK = dt.timedelta(minutes=10)
#: Per-entity state (group status, scrape targets, collectors) is looked up over this slice, so
#: an entity that went silent minutes ago still shows (as silent) without scanning 7 days.
RECENT_LOOKBACK = dt.timedelta(hours=1)
#: Time series are bucketed so a chart never carries more points than this per series.
MAX_POINTS = 400

BROKER_RATE_METRICS = vocabulary.require("messages_in_total", "bytes_in_total", "bytes_out_total")
HEALTH_METRICS = vocabulary.require(
    "up",
    "active_controller_count",
    "under_replicated_partitions",
    "offline_partitions",
    "under_min_isr_partitions",
    "partition_count",
    "leader_count",
    "request_handler_avg_idle_percent",
    "network_processor_avg_idle_percent",
)
IDLE_METRICS = vocabulary.require("request_handler_avg_idle_percent", "network_processor_avg_idle_percent")
ELECTIONS, UP, SCRAPE_DURATION, LOG_END_OFFSET = vocabulary.require(
    "leader_elections_total", "up", "scrape_duration_seconds", "log_end_offset"
)
HEARTBEAT_METRICS = vocabulary.names_from(vocabulary.Source.HEARTBEAT)
(MEMBER_EPOCH,) = vocabulary.require("consumer_group_member_epoch")
#: Sample sources as the SQL below names them.
_ADMIN, _JMX, _TARGETS = vocabulary.Source.ADMIN, vocabulary.JMX_SOURCES, vocabulary.TARGET_SOURCES
_SCRAPED_SOURCES = (*_TARGETS, vocabulary.Source.PROBE.value)


@dataclass(frozen=True)
class Lake:
    """Where the lake and its views file are (resolved against the config file's folder)."""

    path: Path
    duckdb_path: Path

    @classmethod
    def from_config(cls, config: Config) -> Lake:
        return cls(config.resolve_path(config.lake.path), config.resolve_path(config.lake.duckdb_path))


@dataclass(frozen=True)
class Scope:
    """What every page shows: one cluster over [start, end) (aware UTC datetimes)."""

    cluster: str
    start: dt.datetime
    end: dt.datetime

    @property
    def bucket_s(self) -> int:
        """Chart bucket: whole minutes, at most MAX_POINTS buckets over the range."""
        seconds = (self.end - self.start).total_seconds()
        return max(60, math.ceil(seconds / MAX_POINTS / 60) * 60)

    @property
    def latest_start(self) -> dt.datetime:
        return max(self.start, self.end - LATEST_LOOKBACK)

    @property
    def recent_start(self) -> dt.datetime:
        return max(self.start, self.end - RECENT_LOOKBACK)

    def params(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "start": self.start,
            "end": self.end,
            "latest_start": self.latest_start,
            "recent_start": self.recent_start,
            "bucket_s": self.bucket_s,
        }


@contextmanager
def session(lake: Lake) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for one loader; always closed, even when a query fails."""
    con = lakelib.connect_readonly(lake.path, lake.duckdb_path)
    try:
        yield con
    finally:
        con.close()


_PARAM = re.compile(r"\$([a-z_]+)")


def run(con: duckdb.DuckDBPyConnection, sql: str, **values: Any) -> pd.DataFrame:
    """Execute `sql` binding only the `$names` it uses (DuckDB rejects unused ones)."""
    used = set(_PARAM.findall(sql))
    missing = used - values.keys()
    if missing:
        raise KeyError(f"query needs parameters {sorted(missing)}")
    return con.execute(sql, {k: v for k, v in values.items() if k in used}).df()


# ---------------------------------------------------------------------------------------
# SQL. Every filter on a view uses key columns so it is pushed into the Parquet scan.

_IN_RANGE = "cluster = $cluster AND window_start >= $start AND window_start < $end"
_IN_LATEST = "cluster = $cluster AND window_start >= $latest_start AND window_start < $end"
_IN_RECENT = "cluster = $cluster AND window_start >= $recent_start AND window_start < $end"
_BUCKET = "time_bucket(to_seconds($bucket_s), window_start)"

SQL_CLUSTERS = "SELECT DISTINCT cluster FROM group_status UNION SELECT DISTINCT cluster FROM pipeline_progress"

SQL_BROKER_GAUGES = f"""
SELECT metric, broker, arg_max_null("last", window_start) AS value, max(window_end) AS seen
FROM metrics_1m
WHERE {_IN_LATEST} AND source IN {_JMX} AND broker IS NOT NULL AND topic IS NULL
  AND metric IN {HEALTH_METRICS}
GROUP BY ALL ORDER BY metric, broker
"""

#: One scan for every per-broker chart: meter rates, election increases, idle ratios.
SQL_BROKER_SERIES = f"""
SELECT {_BUCKET} AS time, broker, metric, avg(rate_per_s) AS rate_per_s, avg(avg) AS value,
       sum(rate_per_s * epoch(window_end - window_start)) AS increase
FROM metrics_1m
WHERE {_IN_RANGE} AND source IN {_JMX} AND broker IS NOT NULL AND topic IS NULL
  AND metric IN {(*BROKER_RATE_METRICS, ELECTIONS, *IDLE_METRICS)}
GROUP BY ALL ORDER BY time
"""

SQL_CLUSTER_RATES = f"""
WITH per_window AS (
  SELECT window_start, metric, sum(rate_per_s) AS rate_per_s
  FROM metrics_1m
  WHERE {_IN_RANGE} AND source IN {_JMX} AND broker IS NOT NULL AND topic IS NULL
    AND metric IN {BROKER_RATE_METRICS}
  GROUP BY ALL
)
SELECT {_BUCKET} AS time, metric, avg(rate_per_s) AS rate_per_s FROM per_window GROUP BY ALL ORDER BY time
"""

SQL_SCRAPE_HEALTH = f"""
SELECT source, broker, client_id,
       arg_max_null("last", window_start) FILTER (WHERE metric = '{UP}') AS up,
       avg(avg) FILTER (WHERE metric = '{UP}') AS up_ratio_1h,
       arg_max_null("last", window_start) FILTER (WHERE metric = '{SCRAPE_DURATION}') AS scrape_duration_s,
       max(window_end) AS last_seen
FROM metrics_1m
WHERE {_IN_RECENT} AND metric IN {(UP, SCRAPE_DURATION)} AND source IN {_SCRAPED_SOURCES}
GROUP BY ALL ORDER BY source, broker, client_id
"""

#: group_status is keyed by minute (window_start); the filter on it is what reaches the Parquet
#: scan below the views' dedupe, updated_at (within that minute) then trims the edges.
SQL_GROUPS_LATEST = newest_rows(
    "group_status",
    "group_id, status, reason, rule, total_lag, max_lag, max_time_lag_s, max_time_lag_method, partitions, topics, "
    "group_state, members, rebalances, group_type, group_epoch, updated_at",
    key="group_id",
    where="cluster = $cluster AND window_start >= $recent_start - INTERVAL 1 MINUTE AND window_start < $end "
    "AND updated_at >= $recent_start AND updated_at < $end",
    newest_by="updated_at",
)


def _partitions_latest(columns: str) -> str:
    """Each (group, topic, partition)'s newest lag_1m row in the latest slice."""
    return newest_rows("lag_1m", columns, key="group_id, topic, partition", where=_IN_LATEST)


#: From each partition's newest row: a group's ETA is its slowest partition's, and NULL ("not
#: catching up") as soon as one lagging partition is not catching up; rate_span_s is the
#: shortest span any partition's rates were measured over (the ETA's basis).
SQL_GROUP_RATES_LATEST = f"""
WITH latest AS (
{_partitions_latest("group_id, lag, consume_rate, produce_rate, eta_s, rate_span_s")})
SELECT group_id, sum(consume_rate) AS consume_rate, sum(produce_rate) AS produce_rate,
       CASE WHEN bool_or(eta_s IS NULL AND lag > 0) THEN NULL ELSE max(eta_s) END AS eta_s,
       min(rate_span_s) AS rate_span_s
FROM latest GROUP BY group_id
"""

_LOWER_BOUND = lakelib.TimeLagMethod.LOWER_BOUND
SQL_TOPIC_GROUPS_LATEST = f"""
WITH latest AS (
{_partitions_latest("group_id, topic, lag, time_lag_s, time_lag_method, status")})
SELECT topic, group_id, sum(lag) AS total_lag, max(lag) AS max_lag, max(time_lag_s) AS max_time_lag_s,
       CASE WHEN bool_or(time_lag_method = '{_LOWER_BOUND}') THEN '{_LOWER_BOUND}' END AS max_time_lag_method,
       string_agg(DISTINCT status, ', ' ORDER BY status) AS statuses
FROM latest GROUP BY ALL ORDER BY topic, total_lag DESC
"""

SQL_TOPIC_RATES_LATEST = f"""
WITH per_window AS (
  SELECT window_start, topic, metric, sum(rate_per_s) AS rate_per_s
  FROM metrics_1m
  WHERE {_IN_LATEST} AND source IN {_JMX} AND topic IS NOT NULL AND metric IN {BROKER_RATE_METRICS}
  GROUP BY ALL
)
SELECT topic, metric, avg(rate_per_s) AS rate_per_s FROM per_window GROUP BY ALL
"""

#: End offsets at the start and at the end of the range (two short slices, not the whole range).
SQL_TOPIC_OFFSETS = f"""
WITH edges AS (
  SELECT topic, partition,
         arg_min("first", window_start) FILTER (WHERE window_start < $start + INTERVAL 10 MINUTE) AS first_offset,
         arg_max_null("last", window_start) FILTER (WHERE window_start >= $latest_start) AS last_offset
  FROM metrics_1m
  WHERE cluster = $cluster AND metric = '{LOG_END_OFFSET}' AND source = '{_ADMIN}' AND topic IS NOT NULL
    AND ((window_start >= $start AND window_start < $start + INTERVAL 10 MINUTE)
         OR (window_start >= $latest_start AND window_start < $end))
  GROUP BY ALL
)
SELECT topic, count(*) AS partitions, sum(last_offset) AS end_offset,
       sum(last_offset) - sum(first_offset) AS growth
FROM edges GROUP BY topic ORDER BY topic
"""

#: One scan for both charts of a topic: summed rates of the meters and the summed end offset.
SQL_TOPIC_SERIES = f"""
WITH per_window AS (
  SELECT window_start, metric, sum(rate_per_s) AS rate_per_s, sum("last") AS end_offset
  FROM metrics_1m
  WHERE {_IN_RANGE} AND topic = $topic AND source IN {_TARGETS}
    AND metric IN {(LOG_END_OFFSET, *BROKER_RATE_METRICS)}
  GROUP BY ALL
)
SELECT {_BUCKET} AS time, metric, avg(rate_per_s) AS rate_per_s, max(end_offset) AS end_offset
FROM per_window GROUP BY ALL ORDER BY time
"""

#: One scan for the drill-down: per bucket and partition; the page sums partitions itself.
SQL_GROUP_PARTITIONS = f"""
WITH per_window AS (
  SELECT window_start, topic || '/' || partition AS topic_partition, lag, time_lag_s, consume_rate, produce_rate
  FROM lag_1m WHERE {_IN_RANGE} AND group_id = $group
)
SELECT {_BUCKET} AS time, topic_partition, max(lag) AS lag, max(time_lag_s) AS time_lag_s,
       avg(consume_rate) AS consume_rate, avg(produce_rate) AS produce_rate
FROM per_window GROUP BY ALL ORDER BY time, topic_partition
"""

#: Each partition's newest row in the latest slice: its lag and status and the member owning it.
SQL_GROUP_OWNERS = newest_rows(
    "lag_1m",
    "topic, partition, lag, status, retention_margin, retention_margin_s, "
    "owner_client_id, owner_host, owner_member_id, owner_changes, owner_pending, window_start AS minute",
    key="topic, partition",
    where=f"{_IN_LATEST} AND group_id = $group",
    order_by="lag DESC, topic, partition",
)

#: A consumer (KIP-848) group's member epochs in the newest minute the commit log recorded a change
#: (each change carries every member's epoch); metrics_1m keys them by client id.
SQL_GROUP_MEMBER_EPOCHS = f"""
WITH epochs AS (
  SELECT client_id, "last" AS member_epoch, window_start
  FROM metrics_1m
  WHERE {_IN_LATEST} AND group_id = $group AND metric = '{MEMBER_EPOCH}' AND source = '{vocabulary.Source.COMMITLOG}'
)
SELECT client_id, member_epoch FROM epochs
QUALIFY window_start = max(window_start) OVER ()
ORDER BY client_id
"""

SQL_GROUP_STATUS_HISTORY = """
SELECT updated_at AS time, status, reason, total_lag
FROM group_status
WHERE cluster = $cluster AND window_start >= $start - INTERVAL 1 MINUTE AND window_start < $end
  AND updated_at >= $start AND updated_at < $end AND group_id = $group
ORDER BY time
"""

#: The All clusters page: every cluster's groups, newest status each (not-OK ones are listed).
SQL_ALL_GROUPS_LATEST = newest_rows(
    "group_status",
    "cluster, group_id, status, reason, total_lag, updated_at",
    key="cluster, group_id",
    where="window_start >= $recent_start - INTERVAL 1 MINUTE AND window_start < $end "
    "AND updated_at >= $recent_start AND updated_at < $end",
    newest_by="updated_at",
)

#: Every cluster's scrape targets, newest `up` each, and each cluster's newest metrics window.
SQL_ALL_TARGETS_LATEST = f"""
SELECT cluster, source, broker, client_id, arg_max_null("last", window_start) AS up
FROM metrics_1m
WHERE window_start >= $recent_start AND window_start < $end AND metric = '{UP}' AND source IN {_TARGETS}
GROUP BY ALL
"""

SQL_ALL_NEWEST_DATA = """
SELECT cluster, max(newest) AS newest FROM (
  SELECT cluster, max(window_end) AS newest FROM metrics_1m
  WHERE window_start >= $recent_start AND window_start < $end GROUP BY cluster
  UNION ALL
  SELECT cluster, max(updated_at) FROM group_status
  WHERE window_start >= $recent_start - INTERVAL 1 MINUTE AND window_start < $end AND updated_at < $end
  GROUP BY cluster
) GROUP BY cluster
"""

SQL_ALERT_EVENTS = """
SELECT ts, event, alertname, severity, incident_key, seq, labels, value, receiver, detail
FROM alert_events_since($start) WHERE cluster = $cluster AND ts < $end
ORDER BY ts DESC
"""

#: An incident fires until its newest state event says resolved (deliveries are not states).
SQL_ALERTS_FIRING = f"""
SELECT alertname, severity, incident_key, labels, value, ts AS since_or_last
FROM alert_events
WHERE cluster = $cluster AND event IN {STATE_EVENTS}
QUALIFY row_number() OVER (PARTITION BY incident_key ORDER BY ts DESC, seq DESC) = 1 AND event <> '{RESOLVED}'
ORDER BY ts DESC
"""

#: The Spark job and the collectors serve every monitored cluster at once (their rows name the
#: home cluster), so the pipeline's own progress and heartbeats are not filtered by the picked cluster.
SQL_PIPELINE_LATEST = newest_rows(
    "pipeline_progress_since($latest_start)",
    "query, batch_id, ts, input_rows_per_s, processed_rows_per_s, batch_duration_ms, watermark, freshness_s",
    key="query",
    where="ts < $end",
    newest_by="ts",
    order_by="query",
)

SQL_PIPELINE_SERIES = """
SELECT time_bucket(to_seconds($bucket_s), ts) AS time, query,
       avg(input_rows_per_s) AS input_rows_per_s, avg(processed_rows_per_s) AS processed_rows_per_s,
       avg(batch_duration_ms) AS batch_duration_ms, max(freshness_s) AS freshness_s
FROM pipeline_progress_since($start)
WHERE ts < $end
GROUP BY ALL ORDER BY time
"""

SQL_HEARTBEATS = f"""
SELECT client_id AS collector, metric, arg_max_null("last", window_start) AS value,
       avg(rate_per_s) AS rate_per_s, max(window_end) AS last_seen
FROM metrics_1m
WHERE window_start >= $recent_start AND window_start < $end AND source = '{vocabulary.Source.HEARTBEAT}'
  AND metric IN {HEARTBEAT_METRICS}
GROUP BY ALL ORDER BY collector, metric
"""

SQL_DEAD_LETTER_COUNTS = """
SELECT error, source_topic, count(*) AS records, min(received_at) AS first_seen, max(received_at) AS last_seen
FROM dead_letters_since($start) WHERE cluster = $cluster AND received_at < $end
GROUP BY ALL ORDER BY records DESC
"""

SQL_DEAD_LETTER_SAMPLES = """
SELECT received_at, source_topic, source_partition, source_offset, error, raw
FROM dead_letters_since($start) WHERE cluster = $cluster AND received_at < $end
ORDER BY received_at DESC LIMIT 20
"""


# ---------------------------------------------------------------------------------------
# Loaders: one connection each, DataFrames out.

Frames = dict[str, pd.DataFrame]


def clusters(lake: Lake) -> list[str]:
    """Cluster names present in the lake (for the selector)."""
    with session(lake) as con:
        return sorted(run(con, SQL_CLUSTERS)["cluster"].dropna().tolist())


def overview(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        p = scope.params()
        return {
            "gauges": run(con, SQL_BROKER_GAUGES, **p),
            "cluster_rates": run(con, SQL_CLUSTER_RATES, **p),
            "groups": _groups_table(con, p),
            "firing": run(con, SQL_ALERTS_FIRING, **p),
            "pipeline": run(con, SQL_PIPELINE_LATEST, **p),
        }


def brokers(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        p = scope.params()
        gauges = run(con, SQL_BROKER_GAUGES, **p)
        series = run(con, SQL_BROKER_SERIES, **p)
        scrape = run(con, SQL_SCRAPE_HEALTH, **p)
    elections = series[series["metric"] == ELECTIONS]
    return {
        "gauges": gauges,
        "rates": series[series["metric"].isin(BROKER_RATE_METRICS)][["time", "broker", "metric", "rate_per_s"]],
        "idle": series[series["metric"].isin(IDLE_METRICS)][["time", "broker", "metric", "value"]],
        "elections": elections[["time", "broker", "rate_per_s", "increase"]].rename(columns={"increase": "elections"}),
        "scrape": scrape,
    }


def topics(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        p = scope.params()
        rates = run(con, SQL_TOPIC_RATES_LATEST, **p).pivot_table(
            index="topic", columns="metric", values="rate_per_s", aggfunc="first"
        )
        rates = rates.reindex(columns=list(BROKER_RATE_METRICS)).reset_index()
        rates.columns.name = None
        offsets = run(con, SQL_TOPIC_OFFSETS, **p)
        return {
            "topics": offsets.merge(rates, on="topic", how="outer").sort_values("topic", ignore_index=True),
            "groups": run(con, SQL_TOPIC_GROUPS_LATEST, **p),
        }


def topic_detail(lake: Lake, scope: Scope, topic: str) -> Frames:
    with session(lake) as con:
        series = run(con, SQL_TOPIC_SERIES, topic=topic, **scope.params())
    offsets = series[series["metric"] == LOG_END_OFFSET]
    return {
        "rate_series": series[series["metric"] != LOG_END_OFFSET].drop(columns="end_offset"),
        "offset_series": offsets[["time", "end_offset"]].reset_index(drop=True),
    }


def _groups_table(con: duckdb.DuckDBPyConnection, p: dict[str, Any]) -> pd.DataFrame:
    status = run(con, SQL_GROUPS_LATEST, **p)
    rates = run(con, SQL_GROUP_RATES_LATEST, **p)
    return status.merge(rates, on="group_id", how="left").sort_values("group_id", ignore_index=True)


def groups(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        return {"groups": _groups_table(con, scope.params())}


def group_detail(lake: Lake, scope: Scope, group: str) -> Frames:
    with session(lake) as con:
        p = scope.params()
        partitions = run(con, SQL_GROUP_PARTITIONS, group=group, **p)
        status = run(con, SQL_GROUP_STATUS_HISTORY, group=group, **p)
        owners = run(con, SQL_GROUP_OWNERS, group=group, **p)
        member_epochs = run(con, SQL_GROUP_MEMBER_EPOCHS, group=group, **p)
    history = partitions.groupby("time", as_index=False).agg(
        lag=("lag", "sum"),
        time_lag_s=("time_lag_s", "max"),
        consume_rate=("consume_rate", "sum"),
        produce_rate=("produce_rate", "sum"),
    )
    return {
        "partition_lag": partitions[["time", "topic_partition", "lag"]],
        "history": history,
        "status": status,
        "owners": owners,
        "member_epochs": member_epochs,
    }


def alerts(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        p = scope.params()
        return {"firing": run(con, SQL_ALERTS_FIRING, **p), "events": run(con, SQL_ALERT_EVENTS, **p)}


def pipeline(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        p = scope.params()
        return {
            "heartbeats": run(con, SQL_HEARTBEATS, **p),
            "scrape": run(con, SQL_SCRAPE_HEALTH, **p),
            "latest": run(con, SQL_PIPELINE_LATEST, **p),
            "series": run(con, SQL_PIPELINE_SERIES, **p),
            "dead_counts": run(con, SQL_DEAD_LETTER_COUNTS, **p),
            "dead_samples": run(con, SQL_DEAD_LETTER_SAMPLES, **p),
        }


def all_clusters(lake: Lake, scope: Scope, configured: list[str]) -> Frames:
    """The All clusters page: one row per cluster (``configured`` first, then any other in the
    lake) and every cluster's groups that are not OK. ``scope.cluster`` is not used."""
    with session(lake) as con:
        p = scope.params()
        groups = run(con, SQL_ALL_GROUPS_LATEST, **p)
        targets = run(con, SQL_ALL_TARGETS_LATEST, **p)
        newest_data = run(con, SQL_ALL_NEWEST_DATA, **p)
    found = [*groups["cluster"], *targets["cluster"], *newest_data["cluster"]]
    names = configured_first(configured, found)
    not_ok = groups[groups["status"] != vocabulary.STATUS_ORDER[0]].copy()
    not_ok["severity"] = [vocabulary.STATUS_SEVERITY.get(status, 0) for status in not_ok["status"]]
    not_ok = not_ok.sort_values(["severity", "cluster", "group_id"], ascending=[False, True, True])
    return {
        "clusters": _cluster_rows(names, groups, targets, newest_data, scope.end),
        "not_ok": not_ok.drop(columns="severity").reset_index(drop=True),
    }


def configured_first(configured: list[str], found: list[str]) -> list[str]:
    """Every configured cluster (config order), then any other ``found`` in the lake, sorted."""
    return [*configured, *sorted({str(name) for name in found} - set(configured))]


def _cluster_rows(
    names: list[str], groups: pd.DataFrame, targets: pd.DataFrame, newest_data: pd.DataFrame, end: dt.datetime
) -> pd.DataFrame:
    """Per cluster: its groups counted by status (a column per status), brokers and targets up
    ("2 of 3"), and the age in seconds of its newest data (NaN: none in the recent slice)."""
    counts = groups.groupby(["cluster", "status"]).size()
    newest = dict(zip(newest_data["cluster"], newest_data["newest"], strict=True))
    rows = []
    for name in names:
        mine = targets[targets["cluster"] == name]
        brokers = mine[mine["source"].isin(_JMX) & mine["broker"].notna()]
        row: dict[str, Any] = {"cluster": name}
        row |= {status: int(counts.get((name, status), 0)) for status in vocabulary.STATUS_ORDER}
        row["brokers_up"] = _up_of(brokers["up"])
        row["targets_up"] = _up_of(mine["up"])
        seen = newest.get(name)
        row["data_age_s"] = (end - seen).total_seconds() if seen is not None and not pd.isna(seen) else math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=["cluster", *vocabulary.STATUS_ORDER, "brokers_up", "targets_up", "data_age_s"])


def _up_of(up: pd.Series) -> str:
    """'2 of 3': targets whose newest `up` is 1, of those that reported; '–' when none did."""
    return f"{int((up >= 1).sum())} of {len(up)}" if len(up) else "–"


def _groups_page(lake: Lake, scope: Scope) -> Frames:
    """What the groups page runs: the table, then the drill-down of the group with most lag."""
    frames = groups(lake, scope)
    table = frames["groups"]
    if len(table):
        chosen = str(table.sort_values("total_lag", ascending=False)["group_id"].iloc[0])
        frames.update(group_detail(lake, scope, chosen))
    return frames


def _topics_page(lake: Lake, scope: Scope) -> Frames:
    """What the topics page runs: the table, then the detail of the first topic (its default)."""
    frames = topics(lake, scope)
    if len(frames["topics"]):
        frames.update(topic_detail(lake, scope, str(frames["topics"]["topic"].iloc[0])))
    return frames


#: page -> the loader(s) the page runs on a render; the benchmark times these.
PAGE_LOADERS: dict[str, Callable[[Lake, Scope], Frames]] = {
    "overview": overview,
    "clusters": partial(all_clusters, configured=[]),
    "brokers": brokers,
    "topics": _topics_page,
    "groups": _groups_page,
    "alerts": alerts,
    "pipeline": pipeline,
}


# ---------------------------------------------------------------------------------------
# Backtest panel: the metric a rule reads, for the label sets its would-be alerts carry.

#: At most this many label sets are drawn under a backtest's alerts.
BACKTEST_SERIES = 8


def _rule_value_sql(reads: dict[str, Any]) -> str:
    """The value expression of a rule's column; statuses as their rank in the vocabulary's order."""
    if reads["column"] == "status":
        whens = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(vocabulary.STATUS_ORDER))
        return f"(CASE status {whens} END)"
    return f'CAST("{reads["column"]}" AS DOUBLE)'


def backtest_series(lake: Lake, scope: Scope, reads: dict[str, Any], label_sets: list[dict[str, str]]) -> pd.DataFrame:
    """(time, series, value): the rule's column per `by` label set, reduced like the rule, bucketed.

    Table and column names come from the backtest report and are checked against the lake
    contract before they reach the SQL text; label values are bound parameters.
    """
    spec = lakelib.table(reads["table"])
    names = set(spec.column_names)
    by = [b for b in reads["by"] if b in names]
    if reads["time_column"] not in names or (reads["column"] not in names and reads["column"] != "count"):
        return pd.DataFrame(columns=["time", "series", "value"])
    value = "1.0" if reads["column"] == "count" else _rule_value_sql(reads)
    reduce = {"max": "max", "min": "min", "sum": "sum", "avg": "avg"}.get(reads.get("reduce"), "max")
    time_col = reads["time_column"]
    where = [f"cluster = $cluster AND {time_col} >= $start AND {time_col} < $end"]
    params: dict[str, Any] = {**scope.params()}
    if reads.get("metric") and "metric" in names:
        where.append("metric = $metric")
        params["metric"] = reads["metric"]
    chosen = label_sets[:BACKTEST_SERIES]
    for i, label in enumerate(by):
        values = sorted({s.get(label, "") for s in chosen})
        if values:
            name = f"labels_{chr(ord('a') + i)}"  # $names are letters only (see `run`)
            where.append(f'CAST("{label}" AS VARCHAR) IN (SELECT unnest(${name}))')
            params[name] = values
    series = " || ' ' || ".join(f"'{b}=' || CAST(\"{b}\" AS VARCHAR)" for b in by) or "cluster"
    sql = (
        f"SELECT time_bucket(to_seconds($bucket_s), {time_col}) AS time, {series} AS series, "
        f"{reduce}({value}) AS value FROM {spec.name} WHERE {' AND '.join(where)} GROUP BY ALL ORDER BY time"
    )
    with session(lake) as con:
        return run(con, sql, **params)
