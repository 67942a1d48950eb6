"""The newest rows of the lake, read in one pass: what every endpoint answers from.

Why one snapshot: a request must never wait for the lake. The cache (`api.cache`) reads a
snapshot at most once per `[api] cache_s` and every endpoint answers from it; the Prometheus
text is rendered once per snapshot. All SQL runs through `lagwatch.lake.connect_readonly`
against the lake's views, with time filters on key columns so DuckDB reads only the last few
minutes of files (the same shape as the dashboard's "latest" queries: `lagwatch.lake_queries`).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lagwatch import lake as lakelib
from lagwatch.lake_queries import newest_rows
from lagwatch.vocabulary import JMX_SOURCES, Source

if TYPE_CHECKING:
    import duckdb

#: Per-component state (collectors, Spark queries) is looked up over at least this much time,
#: so a component that went silent still shows, as silent.
RECENT = dt.timedelta(hours=1)
#: Columns of lag_1m exported as retention margin when the lake has them.
RETENTION_PREFIX = "retention_margin"
#: Broker gauges exported so the shipped Prometheus rules match the built-in alert defaults.
BROKER_METRICS = (
    "up",
    "under_replicated_partitions",
    "offline_partitions",
    "active_controller_count",
    "leader_elections_total",
)

#: One hash aggregate per (cluster, group, topic, partition): the newest row of the lookback (as a
#: struct, so a NULL time lag stays NULL instead of falling back to an older row) and the oldest row
#: of the commit window (Burrow's `start`). A sort per partition (row_number) costs more (bench/RECORDS.md).
_PARTITIONS_SQL = """
WITH agg AS (
  SELECT cluster, group_id, topic, partition,
         arg_max(struct_pack(committed_offset, end_offset, lag, time_lag_s, status, reason, rule,
                             end_ms := epoch_ms(least(window_end, $until)) {extra}), window_start) AS n,
         arg_min(struct_pack(committed_offset, lag, end_ms := epoch_ms(least(window_end, $until))), window_start)
           FILTER (WHERE window_start >= $window_since) AS o,
         count(*) FILTER (WHERE window_start >= $window_since) AS window_rows
  FROM lag_1m WHERE window_start >= $since AND window_start <= $until
  GROUP BY ALL
)
SELECT cluster, group_id, topic, partition, n.committed_offset, n.end_offset, n.lag, n.time_lag_s, n.status,
       n.reason, n.rule, n.end_ms, o.committed_offset AS start_offset, o.lag AS start_lag, o.end_ms AS start_ms,
       window_rows {extra_out}
FROM agg
ORDER BY cluster, group_id, topic, partition
"""

_GROUPS_SQL = newest_rows(
    "group_status",
    "cluster, group_id, status, reason, rule, group_type, rebalances, rebalancing_s, storm_rebalances, updated_at",
    key="cluster, group_id",
    where="window_start >= $since - INTERVAL 1 MINUTE AND window_start <= $until",
    newest_by="updated_at",
)

_TOPIC_OFFSETS_SQL = f"""
SELECT cluster, topic, partition, arg_max_null("last", window_start) AS end_offset
FROM metrics_1m
WHERE window_start >= $since AND window_start <= $until AND metric = 'log_end_offset' AND source = '{Source.ADMIN}'
  AND topic IS NOT NULL AND partition IS NOT NULL
GROUP BY ALL
"""

_BROKERS_SQL = f"""
SELECT cluster, metric, broker, arg_max_null("last", window_start) AS value,
       arg_max_null(rate_per_s, window_start) AS rate
FROM metrics_1m
WHERE window_start >= $since AND window_start <= $until AND source IN {JMX_SOURCES}
  AND broker IS NOT NULL AND topic IS NULL AND metric IN {BROKER_METRICS}
GROUP BY ALL
"""

#: The admin collector's `up` per cluster: 0 when its newest cycle could not read the cluster.
_CLUSTERS_UP_SQL = f"""
SELECT cluster, arg_max_null("last", window_start) AS value
FROM metrics_1m
WHERE window_start >= $since AND window_start <= $until AND source = '{Source.ADMIN}' AND metric = 'up'
  AND broker IS NULL
GROUP BY ALL
"""

_PIPELINE_SQL = """
SELECT cluster, query, arg_max_null(freshness_s, ts) AS freshness_s, max(ts) AS ts
FROM pipeline_progress_since($recent) WHERE ts <= $until
GROUP BY ALL
"""

_COLLECTORS_SQL = f"""
SELECT cluster, client_id AS collector, max(least(window_end, $until)) AS last_seen
FROM metrics_1m
WHERE window_start >= $recent AND window_start <= $until AND source = '{Source.HEARTBEAT}' AND client_id IS NOT NULL
GROUP BY ALL
"""

_DEAD_LETTERS_SQL = "SELECT cluster, count(*) AS records FROM dead_letters_since($started) GROUP BY ALL"


@dataclass(frozen=True)
class ReadWindow:
    """The time bounds of one read: "now", what is current, and the commit window behind Burrow's start offsets."""

    now: dt.datetime
    lookback: dt.timedelta
    commit_window: dt.timedelta
    started: dt.datetime  # when this API process started (dead letters are counted from then)

    def params(self) -> dict[str, Any]:
        return {
            "until": self.now,
            "since": self.now - self.lookback,
            "window_since": self.now - self.commit_window,
            "recent": self.now - max(self.lookback, RECENT),
            "started": self.started,
        }


@dataclass
class Snapshot:
    """The lake's newest rows, indexed the way the endpoints look them up."""

    taken_at: dt.datetime
    read_seconds: float
    commit_window_s: float
    #: One dict per (cluster, group, topic, partition): the newest lag_1m row plus the oldest in the commit window.
    partitions: list[dict[str, Any]]
    #: (cluster, group) -> newest group_status row.
    groups: dict[tuple[str, str], dict[str, Any]]
    #: (cluster, topic) -> {partition: log end offset}.
    topic_offsets: dict[tuple[str, str], dict[int, int]]
    brokers: list[dict[str, Any]]
    #: cluster -> the admin collector's newest `up` (1 read, 0 not), for clusters the lake has it of.
    clusters_up: dict[str, float]
    pipeline: list[dict[str, Any]]
    collectors: list[dict[str, Any]]
    dead_letters: dict[str, int]
    #: lag_1m columns named retention_margin* (present only once the lake carries them).
    retention_columns: list[str]
    #: Every configured cluster, listed even before the lake has a row of it (as Burrow lists its
    #: configured clusters); the first is the home cluster.
    configured_clusters: tuple[str, ...]
    by_group: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    memo: dict[Any, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in self.partitions:
            grouped[(row["cluster"], row["group_id"])].append(row)
        for key in self.groups:
            grouped.setdefault(key, [])
        self.by_group = dict(grouped)

    @property
    def clusters(self) -> list[str]:
        names = set(self.configured_clusters)
        names.update(c for c, _ in self.by_group)
        names.update(c for c, _ in self.topic_offsets)
        return sorted(names)

    def consumers(self, cluster: str) -> list[str]:
        return sorted(g for c, g in self.by_group if c == cluster)

    def topics(self, cluster: str) -> list[str]:
        return sorted(t for c, t in self.topic_offsets if c == cluster)

    def consumers_of_topic(self, cluster: str, topic: str) -> list[str]:
        return sorted({r["group_id"] for r in self.partitions if r["cluster"] == cluster and r["topic"] == topic})

    def newest_data(self) -> dt.datetime | None:
        """The newest moment the lake says it measured: a group status's `updated_at` (the newest
        observation behind it, written with the lag rows of the same batch) or a Spark progress
        report. Not a lag_1m row's window end: a minute still open ends in the future, which made
        a lake the Spark job stopped writing look fresh until that minute was over."""
        stamps = [g["updated_at"] for g in self.groups.values() if g["updated_at"] is not None]
        stamps += [p["ts"] for p in self.pipeline if p["ts"] is not None]
        return max(stamps, default=None)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    used = set(re.findall(r"\$([a-z_]+)", sql))
    cursor = con.execute(sql, {k: v for k, v in params.items() if k in used})
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _retention_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    names = [row[0] for row in con.execute("DESCRIBE lag_1m").fetchall()]
    return [n for n in names if n.startswith(RETENTION_PREFIX)]


def _topic_offsets(
    rows: list[dict[str, Any]], partitions: list[dict[str, Any]]
) -> dict[tuple[str, str], dict[int, int]]:
    """Log end offsets from the admin collector's samples; a partition only lag_1m knows uses its end offset."""
    offsets: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for row in rows:
        if row["end_offset"] is not None:
            offsets[(row["cluster"], row["topic"])][int(row["partition"])] = int(row["end_offset"])
    for row in partitions:
        per_topic = offsets[(row["cluster"], row["topic"])]
        if row["end_offset"] is not None and row["partition"] not in per_topic:
            per_topic[row["partition"]] = int(row["end_offset"])
    return dict(offsets)


def read_snapshot(lake: Path, views: Path, window: ReadWindow, configured_clusters: Sequence[str]) -> Snapshot:
    """One pass over the lake's newest rows (one read-only connection to `views`, closed before returning)."""
    started = time.perf_counter()
    params = window.params()
    con = lakelib.connect_readonly(lake, views)
    try:
        retention = _retention_columns(con)
        extra = "".join(f", {c}" for c in retention)
        extra_out = "".join(f", n.{c} AS {c}" for c in retention)
        partitions = _rows(con, _PARTITIONS_SQL.format(extra=extra, extra_out=extra_out), params)
        groups = {(r["cluster"], r["group_id"]): r for r in _rows(con, _GROUPS_SQL, params)}
        topic_rows = _rows(con, _TOPIC_OFFSETS_SQL, params)
        brokers = _rows(con, _BROKERS_SQL, params)
        clusters_up = {r["cluster"]: r["value"] for r in _rows(con, _CLUSTERS_UP_SQL, params) if r["value"] is not None}
        pipeline = _rows(con, _PIPELINE_SQL, params)
        collectors = _rows(con, _COLLECTORS_SQL, params)
        dead = {r["cluster"]: int(r["records"]) for r in _rows(con, _DEAD_LETTERS_SQL, params)}
    finally:
        con.close()
    return Snapshot(
        taken_at=window.now,
        read_seconds=time.perf_counter() - started,
        commit_window_s=window.commit_window.total_seconds(),
        partitions=partitions,
        groups=groups,
        topic_offsets=_topic_offsets(topic_rows, partitions),
        brokers=brokers,
        clusters_up=clusters_up,
        pipeline=pipeline,
        collectors=collectors,
        dead_letters=dead,
        retention_columns=retention,
        configured_clusters=tuple(configured_clusters),
    )
