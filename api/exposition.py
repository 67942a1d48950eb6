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

Why hand-formatted lines instead of prometheus_client's registry: 2,000 groups × 20
partitions make about 400,000 samples; building a sample object each costs seconds, a
formatted line a fraction of that, once per snapshot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.utils import floatToGoString

from api import statuses
from api.snapshot import Snapshot

LEVELS: tuple[str, ...] = ("cluster", "group", "group_topic", "partition")

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
        "Group status as its severity (0 OK … 6 LOSS), status and rule as labels",
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

    def add(self, family: str, labels: str, value: Any) -> None:
        series = f"{family}{{{labels}}}" if labels else family
        self.by_family[_FAMILY_INDEX[family]].append(f"{series} {_number(value)}\n")


@dataclass(frozen=True)
class _Unit:
    """What the limit keeps or drops whole: one group's, group-topic's or partition's series."""

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

    @property
    def total_lag(self) -> int:
        return sum(max(0, r["lag"] or 0) for r in self.partitions)

    @property
    def severity(self) -> int:
        if self.status_row is not None:
            return statuses.severity(self.status_row["status"])
        return max((statuses.severity(r["status"]) for r in self.partitions), default=0)


def _groups_worst_first(snap: Snapshot) -> list[_Group]:
    groups = [_Group(c, g, rows, snap.groups.get((c, g))) for (c, g), rows in snap.by_group.items()]
    return sorted(groups, key=lambda g: (-g.severity, -g.total_lag, g.cluster, g.group))


def _group_unit(group: _Group) -> _Unit:
    rows = group.partitions
    time_lags = [r["time_lag_s"] for r in rows if r["time_lag_s"] is not None]
    burrow = statuses.burrow_group_status([statuses.burrow_partition_status(r["status"]) for r in rows])
    # Lagwatch's own group status: the group_status row, else the worst partition's.
    status_source = group.status_row or max(rows, key=lambda r: statuses.severity(r["status"]), default=None)
    series = 2 + 2 * bool(rows) + bool(time_lags) + (status_source is not None)

    def write(out: _Lines) -> None:
        c, g = out.esc(group.cluster), out.esc(group.group)
        klx, brw = f'cluster_name="{c}",group="{g}"', f'cluster="{c}",consumer_group="{g}"'
        out.add("burrow_kafka_consumer_status", brw, statuses.BURROW_CODES[burrow])
        out.add("burrow_kafka_consumer_lag_total", brw, group.total_lag)
        if rows:
            out.add("kafka_consumergroup_group_max_lag", klx, max(max(0, r["lag"] or 0) for r in rows))
            out.add("kafka_consumergroup_group_sum_lag", klx, group.total_lag)
        if time_lags:
            out.add("kafka_consumergroup_group_max_lag_seconds", klx, max(time_lags))
        if status_source is not None:
            status, rule = out.esc(status_source["status"]), out.esc(status_source["rule"])
            labels = f'cluster="{c}",group="{g}",status="{status}",rule="{rule}"'
            out.add("lagwatch_consumergroup_status", labels, statuses.severity(status_source["status"]))

    return _Unit(series, write)


def _group_topic_units(group: _Group) -> list[_Unit]:
    sums: dict[str, int] = defaultdict(int)
    for r in group.partitions:
        sums[r["topic"]] += max(0, r["lag"] or 0)

    def unit(topic: str, total: int) -> _Unit:
        def write(out: _Lines) -> None:
            labels = f'cluster_name="{out.esc(group.cluster)}",group="{out.esc(group.group)}",topic="{out.esc(topic)}"'
            out.add("kafka_consumergroup_group_topic_sum_lag", labels, total)

        return _Unit(1, write)

    return [unit(topic, total) for topic, total in sorted(sums.items())]


def _partition_unit(row: dict[str, Any], retention: list[str]) -> _Unit:
    margins = [(retention_family(col), row[col]) for col in retention if row.get(col) is not None]
    has_time = row["time_lag_s"] is not None
    has_offset = row["committed_offset"] is not None
    series = 4 + 2 * has_offset + has_time + len(margins)

    def write(out: _Lines) -> None:
        c, g, t, p = out.esc(row["cluster"]), out.esc(row["group_id"]), out.esc(row["topic"]), row["partition"]
        lag = max(0, row["lag"] or 0)
        klx = f'cluster_name="{c}",group="{g}",topic="{t}",partition="{p}",member_host="",consumer_id="",client_id=""'
        brw = f'cluster="{c}",consumer_group="{g}",topic="{t}",partition="{p}"'
        out.add("kafka_consumergroup_group_lag", klx, lag)
        out.add("burrow_kafka_consumer_partition_lag", brw, lag)
        if has_offset:
            out.add("kafka_consumergroup_group_offset", klx, row["committed_offset"])
            out.add("burrow_kafka_consumer_current_offset", brw, row["committed_offset"])
        if has_time:
            out.add("kafka_consumergroup_group_lag_seconds", klx, row["time_lag_s"])
        code = statuses.BURROW_CODES[statuses.burrow_partition_status(row["status"])]
        out.add("burrow_kafka_topic_partition_status", brw, code)
        lw = f'cluster="{c}",group="{g}",topic="{t}",partition="{p}"'
        status_labels = f'{lw},status="{out.esc(row["status"])}",rule="{out.esc(row["rule"])}"'
        out.add("lagwatch_consumergroup_partition_status", status_labels, statuses.severity(row["status"]))
        for family, value in margins:
            out.add(family, lw, value)

    return _Unit(series, write)


def _topic_partition_units(snap: Snapshot) -> list[_Unit]:
    units = []
    for (cluster, topic), offsets in sorted(snap.topic_offsets.items()):
        for partition, offset in sorted(offsets.items()):

            def write(
                out: _Lines,
                cluster: str = cluster,
                topic: str = topic,
                partition: int = partition,
                offset: int = offset,
            ) -> None:
                c, t = out.esc(cluster), out.esc(topic)
                out.add(
                    "kafka_partition_latest_offset", f'cluster_name="{c}",topic="{t}",partition="{partition}"', offset
                )
                out.add(
                    "burrow_kafka_topic_partition_offset", f'cluster="{c}",topic="{t}",partition="{partition}"', offset
                )

            units.append(_Unit(2, write))
    return units


def _levels(snap: Snapshot) -> list[tuple[str, Iterable[_Unit]]]:
    groups = _groups_worst_first(snap)
    partitions = (_partition_unit(r, snap.retention_columns) for g in groups for r in g.partitions)
    return [
        ("cluster", _cluster_units(snap)),
        ("group", [_group_unit(g) for g in groups]),
        ("group_topic", [u for g in groups for u in _group_topic_units(g)]),
        ("partition", [*partitions, *_topic_partition_units(snap)]),
    ]


def render(snap: Snapshot, max_series: int, dropped_totals: dict[str, int]) -> Rendered:
    """The /metrics body for `snap`; adds this render's drops to `dropped_totals` (the counter)."""
    out = _Lines()
    budget = max_series - SELF_SERIES
    dropped = dict.fromkeys(LEVELS, 0)
    full = False
    for level, units in _levels(snap):
        for unit in units:
            if full or unit.series > budget:
                full = True
                dropped[level] += unit.series
                continue
            unit.write(out)
            budget -= unit.series
    for level, count in dropped.items():
        dropped_totals[level] = dropped_totals.get(level, 0) + count
    exported = sum(len(lines) for lines in out.by_family) + SELF_SERIES
    out.add("lagwatch_api_snapshot_timestamp_seconds", "", snap.taken_at.timestamp())
    out.add("lagwatch_api_lake_read_seconds", "", snap.read_seconds)
    out.add("lagwatch_api_series_exported", "", exported)
    for level in LEVELS:
        out.add("lagwatch_api_series_dropped", f'level="{level}"', dropped[level])
        out.add("lagwatch_api_series_dropped_total", f'level="{level}"', dropped_totals[level])
    return Rendered(_text(out), exported, dropped)


def _text(out: _Lines) -> bytes:
    parts: list[str] = []
    for (name, kind, help_text), lines in zip(FAMILIES, out.by_family, strict=True):
        if lines:
            parts.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
            parts.extend(lines)
    return "".join(parts).encode()
