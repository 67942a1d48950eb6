"""`/metrics`: the snapshot in the Prometheus text format, under a series limit.

Names and labels are those of kafka-lag-exporter (`cluster_name`, `group`, `topic`,
`partition`, `member_host`, `consumer_id`, `client_id`) and Burrow (`cluster`,
`consumer_group`, `topic`, `partition`), so existing rules and dashboards keep working; the
`lagwatch_*` series add what those tools lack (status with its rule, pipeline health, …).
docs/api.md lists every family with its source column.

The series limit (`[api] max_series`) fills levels coarse to fine: cluster-wide series, then
one block per group (worst groups first), then per group and topic, then per partition. When
a level does not fit, the rest of it and every finer level are dropped, and the counts go to
`lagwatch_api_series_dropped{level}` (this render) and `lagwatch_api_series_dropped_total`.

Why hand-formatted lines instead of prometheus_client's registry: a big cluster's snapshot
holds hundreds of thousands of partition samples, and a sample object each costs far more
than a formatted line, once per snapshot (bench/RECORDS.md, "API").
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from typing import Any

from prometheus_client.utils import floatToGoString

from api import statuses
from api.snapshot import Snapshot

LEVELS: tuple[str, ...] = ("cluster", "group", "group_topic", "partition")

#: "0 OK, 1 WARN, …": the value of a status series, as its help text says.
_SEVERITIES = ", ".join(f"{rank} {name}" for rank, name in enumerate(statuses.SEVERITY_ORDER))


#: (name, type, help) in output order.
FAMILIES: tuple[tuple[str, str, str], ...] = (
    # kafka-lag-exporter
    ("kafka_consumergroup_group_offset", "gauge", "Last group consumed offset of a partition"),
    ("kafka_consumergroup_group_lag", "gauge", "Group offset lag of a partition"),
    ("kafka_consumergroup_group_lag_seconds", "gauge", "Group time lag of a partition"),
    ("kafka_consumergroup_group_max_lag", "gauge", "Max group offset lag"),
    ("kafka_consumergroup_group_max_lag_seconds", "gauge", "Max group time lag"),
    ("kafka_consumergroup_group_sum_lag", "gauge", "Sum of group offset lag"),
    ("kafka_consumergroup_group_topic_sum_lag", "gauge", "Sum of group offset lag across topic partitions"),
    ("kafka_partition_latest_offset", "gauge", "Latest offset of a partition"),
    # Burrow
    ("burrow_kafka_consumer_status", "gauge", "Group status: 0 NOTFOUND, 1 OK, 2 WARN, 3 ERR"),
    ("burrow_kafka_consumer_lag_total", "gauge", "The sum of all partition current lag values for the group"),
    (
        "burrow_kafka_consumer_partition_lag",
        "gauge",
        "Number of messages the consumer group is behind by for a partition",
    ),
    ("burrow_kafka_consumer_current_offset", "gauge", "Latest committed offset of the group for this partition"),
    ("burrow_kafka_topic_partition_status", "gauge", "Partition status: 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND"),
    ("burrow_kafka_topic_partition_offset", "gauge", "Latest offset of the topic partition"),
    # Lagwatch
    (
        "lagwatch_consumergroup_status",
        "gauge",
        f"Group status as its severity ({_SEVERITIES}), status, rule and group_type as labels",
    ),
    (
        "lagwatch_consumergroup_rebalances",
        "gauge",
        "Rebalances within the lag window (every one with the commit log, else collector cycles that saw one)",
    ),
    ("lagwatch_consumergroup_rebalancing_seconds", "gauge", "Seconds of the lag window the group spent rebalancing"),
    (
        "lagwatch_consumergroup_storm_rebalances",
        "gauge",
        "Rebalances within lag.rebalance_storm_window_s when they make a rebalance storm, else 0",
    ),
    ("lagwatch_consumergroup_partition_status", "gauge", "Partition status as its severity, status and rule as labels"),
    (
        "lagwatch_consumergroup_retention_margin_records",
        "gauge",
        "Records between the committed offset and the log start",
    ),
    (
        "lagwatch_consumergroup_retention_margin_seconds",
        "gauge",
        "Seconds until retention deletes the committed offset",
    ),
    ("lagwatch_cluster_up", "gauge", "1 when the admin collector's newest cycle read the cluster, 0 when it could not"),
    ("lagwatch_broker_up", "gauge", "1 when the broker answered its newest scrape"),
    ("lagwatch_broker_under_replicated_partitions", "gauge", "Under-replicated partitions led by the broker"),
    ("lagwatch_broker_offline_partitions", "gauge", "Offline partitions (controller's count)"),
    ("lagwatch_broker_active_controller_count", "gauge", "1 on the active controller"),
    ("lagwatch_broker_leader_elections_per_second", "gauge", "Leader elections per second"),
    ("lagwatch_pipeline_freshness_seconds", "gauge", "How far the lake is behind the samples, per Spark query"),
    ("lagwatch_pipeline_last_progress_timestamp_seconds", "gauge", "When the Spark query last reported progress"),
    ("lagwatch_collector_last_report_timestamp_seconds", "gauge", "When the collector instance last reported"),
    ("lagwatch_dead_letters_total", "counter", "Malformed records written to dead_letters since this API started"),
    ("lagwatch_api_snapshot_timestamp_seconds", "gauge", "When the API read the lake for this answer"),
    ("lagwatch_api_lake_read_seconds", "gauge", "How long reading the lake took"),
    ("lagwatch_api_series_exported", "gauge", "Series in this answer"),
    ("lagwatch_api_series_dropped", "gauge", "Series left out of this answer by [api] max_series, per level"),
    ("lagwatch_api_series_dropped_total", "counter", "Series left out by [api] max_series, summed over renders"),
)
_FAMILY_INDEX = {name: i for i, (name, _, _) in enumerate(FAMILIES)}
_BROKER_FAMILY = {
    "up": "lagwatch_broker_up",
    "under_replicated_partitions": "lagwatch_broker_under_replicated_partitions",
    "offline_partitions": "lagwatch_broker_offline_partitions",
    "active_controller_count": "lagwatch_broker_active_controller_count",
    "leader_elections_total": "lagwatch_broker_leader_elections_per_second",
}
#: Series the API always writes about itself (not subject to the limit's levels).
SELF_SERIES = 3 + 2 * len(LEVELS)


def _escape(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return floatToGoString(value)


def retention_family(column: str) -> str:
    """retention_margin_s (or any *_s / *_seconds column) is seconds; the rest count records."""
    seconds = column.endswith(("_s", "_seconds"))
    return "lagwatch_consumergroup_retention_margin_" + ("seconds" if seconds else "records")


@dataclass
class Rendered:
    text: bytes
    exported: int
    dropped: dict[str, int]


@dataclass
class _Lines:
    """Lines per family, plus the escaped label strings shared by many lines."""

    by_family: list[list[str]] = field(default_factory=lambda: [[] for _ in FAMILIES])
    escaped: dict[object, str] = field(default_factory=dict)

    def esc(self, value: object) -> str:
        cached = self.escaped.get(value)
        if cached is None:
            cached = self.escaped[value] = _escape("" if value is None else value)
        return cached

    def family(self, name: str) -> list[str]:
        return self.by_family[_FAMILY_INDEX[name]]

    def add(self, family: str, labels: str, value: Any) -> None:
        series = f"{family}{{{labels}}}" if labels else family
        self.by_family[_FAMILY_INDEX[family]].append(f"{series} {_number(value)}\n")


@dataclass(frozen=True)
class _Unit:
    """What the limit keeps or drops whole: one broker's, query's, group's or group-topic's series.

    Partitions are not units: at 40,000 per refresh they are counted and written a family at a
    time (`_partition_level`)."""

    series: int
    write: Callable[[_Lines], None]


# ---------------------------------------------------------------------------------------
# Units per level


def _cluster_units(snap: Snapshot) -> list[_Unit]:
    units = []
    for row in snap.brokers:
        family = _BROKER_FAMILY[row["metric"]]
        value = row["rate"] if row["metric"] == "leader_elections_total" else row["value"]
        if value is None:
            continue

        def write(out: _Lines, row: dict[str, Any] = row, family: str = family, value: Any = value) -> None:
            out.add(family, f'cluster="{out.esc(row["cluster"])}",broker="{out.esc(row["broker"])}"', value)

        units.append(_Unit(1, write))
    for cluster, up in sorted(snap.clusters_up.items()):

        def write_cluster_up(out: _Lines, cluster: str = cluster, up: float = up) -> None:
            out.add("lagwatch_cluster_up", f'cluster="{out.esc(cluster)}"', up)

        units.append(_Unit(1, write_cluster_up))
    for row in snap.pipeline:

        def write_pipeline(out: _Lines, row: dict[str, Any] = row) -> None:
            labels = f'cluster="{out.esc(row["cluster"])}",query="{out.esc(row["query"])}"'
            if row["freshness_s"] is not None:
                out.add("lagwatch_pipeline_freshness_seconds", labels, row["freshness_s"])
            out.add("lagwatch_pipeline_last_progress_timestamp_seconds", labels, row["ts"].timestamp())

        units.append(_Unit(1 + (row["freshness_s"] is not None), write_pipeline))
    for row in snap.collectors:

        def write_collector(out: _Lines, row: dict[str, Any] = row) -> None:
            labels = f'cluster="{out.esc(row["cluster"])}",collector="{out.esc(row["collector"])}"'
            out.add("lagwatch_collector_last_report_timestamp_seconds", labels, row["last_seen"].timestamp())

        units.append(_Unit(1, write_collector))
    for cluster in snap.clusters:

        def write_dead(out: _Lines, cluster: str = cluster) -> None:
            out.add("lagwatch_dead_letters_total", f'cluster="{out.esc(cluster)}"', snap.dead_letters.get(cluster, 0))

        units.append(_Unit(1, write_dead))
    return units


@dataclass(frozen=True)
class _Group:
    cluster: str
    group: str
    partitions: list[dict[str, Any]]
    status_row: dict[str, Any] | None

    @cached_property
    def known_lags(self) -> list[int]:
        """The partitions' lags where known: an ERR row (its cluster unreachable) has none."""
        return [max(0, r["lag"]) for r in self.partitions if r["lag"] is not None]

    @cached_property
    def total_lag(self) -> int:
        return sum(self.known_lags)

    @cached_property
    def severity(self) -> int:
        if self.status_row is not None:
            return statuses.severity(self.status_row["status"])
        return max((statuses.severity(r["status"]) for r in self.partitions), default=0)


def _groups_worst_first(snap: Snapshot) -> list[_Group]:
    groups = [_Group(c, g, rows, snap.groups.get((c, g))) for (c, g), rows in snap.by_group.items()]
    return sorted(groups, key=lambda g: (-g.severity, -g.total_lag, g.cluster, g.group))


def _group_unit(group: _Group) -> _Unit:
    rows, lags = group.partitions, group.known_lags
    time_lags = [r["time_lag_s"] for r in rows if r["time_lag_s"] is not None]
    burrow = statuses.burrow_group_status([statuses.burrow_partition_status(r["status"]) for r in rows])
    # Lagwatch's own group status: the group_status row, else the worst partition's.
    status_source = group.status_row or max(rows, key=lambda r: statuses.severity(r["status"]), default=None)
    rebalance_values = _rebalance_values(group.status_row)
    series = 1 + 3 * bool(lags) + bool(time_lags) + (status_source is not None) + len(rebalance_values)

    def write(out: _Lines) -> None:
        c, g = out.esc(group.cluster), out.esc(group.group)
        klx, brw = f'cluster_name="{c}",group="{g}"', f'cluster="{c}",consumer_group="{g}"'
        out.add("burrow_kafka_consumer_status", brw, statuses.BURROW_CODES[burrow])
        if lags:  # no known lag (every partition ERR): the lag series are absent, never 0
            out.add("burrow_kafka_consumer_lag_total", brw, group.total_lag)
            out.add("kafka_consumergroup_group_max_lag", klx, max(lags))
            out.add("kafka_consumergroup_group_sum_lag", klx, group.total_lag)
        if time_lags:
            out.add("kafka_consumergroup_group_max_lag_seconds", klx, max(time_lags))
        if status_source is not None:
            status, rule = out.esc(status_source["status"]), out.esc(status_source["rule"])
            group_type = out.esc(status_source.get("group_type") or "")  # "": not known (a partition row)
            labels = f'cluster="{c}",group="{g}",status="{status}",rule="{rule}",group_type="{group_type}"'
            out.add("lagwatch_consumergroup_status", labels, statuses.severity(status_source["status"]))
        for family, value in rebalance_values:
            out.add(family, f'cluster="{c}",group="{g}"', value)

    return _Unit(series, write)


#: (metric family, group_status column) of the rebalance series.
_REBALANCE_FAMILIES = (
    ("lagwatch_consumergroup_rebalances", "rebalances"),
    ("lagwatch_consumergroup_rebalancing_seconds", "rebalancing_s"),
    ("lagwatch_consumergroup_storm_rebalances", "storm_rebalances"),
)


def _rebalance_values(status_row: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """The group_status row's rebalances, rebalancing seconds and storm, those it has (NULL in older rows)."""
    if status_row is None:
        return []
    return [(f, status_row[column]) for f, column in _REBALANCE_FAMILIES if status_row.get(column) is not None]


def _group_topic_units(group: _Group) -> list[_Unit]:
    sums: dict[str, int] = defaultdict(int)
    for r in group.partitions:
        if r["lag"] is not None:
            sums[r["topic"]] += max(0, r["lag"])

    def unit(topic: str, total: int) -> _Unit:
        def write(out: _Lines) -> None:
            labels = f'cluster_name="{out.esc(group.cluster)}",group="{out.esc(group.group)}",topic="{out.esc(topic)}"'
            out.add("kafka_consumergroup_group_topic_sum_lag", labels, total)

        return _Unit(1, write)

    return [unit(topic, total) for topic, total in sorted(sums.items())]


def _partition_series(row: dict[str, Any], retention: list[str]) -> int:
    has_lag, has_offset = row["lag"] is not None, row["committed_offset"] is not None
    margins = sum(row.get(col) is not None for col in retention)
    return 2 + 2 * has_lag + 2 * has_offset + (row["time_lag_s"] is not None) + margins


def _write_partitions(out: _Lines, rows: list[dict[str, Any]], retention: list[str]) -> None:
    """Every series of `rows`, a family at a time (list comprehensions: this runs over every partition
    row of a big cluster's snapshot at each refresh; bench/RECORDS.md, "API")."""
    esc = out.esc
    keys = [(esc(r["cluster"]), esc(r["group_id"]), esc(r["topic"]), r["partition"]) for r in rows]
    own = [f'cluster="{c}",group="{g}",topic="{t}",partition="{p}"' for c, g, t, p in keys]
    klx = [
        f'cluster_name="{c}",group="{g}",topic="{t}",partition="{p}",member_host="",consumer_id="",client_id=""'
        for c, g, t, p in keys
    ]
    brw = [f'cluster="{c}",consumer_group="{g}",topic="{t}",partition="{p}"' for c, g, t, p in keys]
    # An ERR row (its cluster unreachable) has no lag: its lag series are absent, its status series stay.
    with_lag = [(i, max(0, r["lag"])) for i, r in enumerate(rows) if r["lag"] is not None]
    fam = out.family
    fam("kafka_consumergroup_group_lag").extend(
        [f"kafka_consumergroup_group_lag{{{klx[i]}}} {v}\n" for i, v in with_lag]
    )
    fam("burrow_kafka_consumer_partition_lag").extend(
        [f"burrow_kafka_consumer_partition_lag{{{brw[i]}}} {v}\n" for i, v in with_lag]
    )
    with_offset = [i for i, r in enumerate(rows) if r["committed_offset"] is not None]
    fam("kafka_consumergroup_group_offset").extend(
        [f"kafka_consumergroup_group_offset{{{klx[i]}}} {rows[i]['committed_offset']}\n" for i in with_offset]
    )
    fam("burrow_kafka_consumer_current_offset").extend(
        [f"burrow_kafka_consumer_current_offset{{{brw[i]}}} {rows[i]['committed_offset']}\n" for i in with_offset]
    )
    fam("kafka_consumergroup_group_lag_seconds").extend(
        [
            f"kafka_consumergroup_group_lag_seconds{{{klx[i]}}} {_number(r['time_lag_s'])}\n"
            for i, r in enumerate(rows)
            if r["time_lag_s"] is not None
        ]
    )
    codes = {s: statuses.BURROW_CODES[statuses.burrow_partition_status(s)] for s in {r["status"] for r in rows}}
    fam("burrow_kafka_topic_partition_status").extend(
        [f"burrow_kafka_topic_partition_status{{{k}}} {codes[r['status']]}\n" for k, r in zip(brw, rows, strict=True)]
    )
    fam("lagwatch_consumergroup_partition_status").extend(
        [
            f'lagwatch_consumergroup_partition_status{{{k},status="{esc(r["status"])}",rule="{esc(r["rule"])}"}} '
            f"{statuses.severity(r['status'])}\n"
            for k, r in zip(own, rows, strict=True)
        ]
    )
    for col in retention:
        name = retention_family(col)
        fam(name).extend(
            [f"{name}{{{k}}} {_number(r[col])}\n" for k, r in zip(own, rows, strict=True) if r.get(col) is not None]
        )


def _write_topic_partitions(out: _Lines, offsets: list[tuple[str, str, int, int]]) -> None:
    for cluster, topic, partition, offset in offsets:
        c, t = out.esc(cluster), out.esc(topic)
        out.add("kafka_partition_latest_offset", f'cluster_name="{c}",topic="{t}",partition="{partition}"', offset)
        out.add("burrow_kafka_topic_partition_offset", f'cluster="{c}",topic="{t}",partition="{partition}"', offset)


@dataclass(frozen=True)
class _Level:
    """One level of the limit: the series count of each item (kept in order) and a writer of the first k."""

    name: str
    counts: list[int]
    write_first: Callable[[_Lines, int], None]


def _unit_level(name: str, units: list[_Unit]) -> _Level:
    def write_first(out: _Lines, k: int) -> None:
        for unit in units[:k]:
            unit.write(out)

    return _Level(name, [u.series for u in units], write_first)


def _partition_level(snap: Snapshot, groups: list[_Group]) -> _Level:
    rows = [r for g in groups for r in g.partitions]
    offsets = [
        (cluster, topic, partition, offset)
        for (cluster, topic), per_topic in sorted(snap.topic_offsets.items())
        for partition, offset in sorted(per_topic.items())
    ]
    counts = [_partition_series(r, snap.retention_columns) for r in rows] + [2] * len(offsets)

    def write_first(out: _Lines, k: int) -> None:
        _write_partitions(out, rows[:k], snap.retention_columns)
        _write_topic_partitions(out, offsets[: max(0, k - len(rows))])

    return _Level("partition", counts, write_first)


def _levels(snap: Snapshot) -> list[_Level]:
    groups = _groups_worst_first(snap)
    return [
        _unit_level("cluster", _cluster_units(snap)),
        _unit_level("group", [_group_unit(g) for g in groups]),
        _unit_level("group_topic", [u for g in groups for u in _group_topic_units(g)]),
        _partition_level(snap, groups),
    ]


def render(snap: Snapshot, max_series: int, dropped_totals: dict[str, int]) -> Rendered:
    """The /metrics body for `snap`; adds this render's drops to `dropped_totals` (the counter)."""
    out = _Lines()
    budget = max_series - SELF_SERIES
    dropped = dict.fromkeys(LEVELS, 0)
    full = False
    for level in _levels(snap):
        cumulative = list(accumulate(level.counts))
        kept = 0 if full else bisect_right(cumulative, budget)
        level.write_first(out, kept)
        budget -= cumulative[kept - 1] if kept else 0
        dropped[level.name] = (cumulative[-1] if cumulative else 0) - (cumulative[kept - 1] if kept else 0)
        full = full or kept < len(cumulative)
    for level_name, count in dropped.items():
        dropped_totals[level_name] = dropped_totals.get(level_name, 0) + count
    exported = sum(len(lines) for lines in out.by_family) + SELF_SERIES
    out.add("lagwatch_api_snapshot_timestamp_seconds", "", snap.taken_at.timestamp())
    out.add("lagwatch_api_lake_read_seconds", "", snap.read_seconds)
    out.add("lagwatch_api_series_exported", "", exported)
    for level_name in LEVELS:
        out.add("lagwatch_api_series_dropped", f'level="{level_name}"', dropped[level_name])
        out.add("lagwatch_api_series_dropped_total", f'level="{level_name}"', dropped_totals[level_name])
    return Rendered(_text(out), exported, dropped)


def _text(out: _Lines) -> bytes:
    parts: list[str] = []
    for (name, kind, help_text), lines in zip(FAMILIES, out.by_family, strict=True):
        if lines:
            parts.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
            parts.extend(lines)
    return "".join(parts).encode()
