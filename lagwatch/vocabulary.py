"""The one vocabulary: every metric name a collector publishes, and the lag status names.

Why one home: collectors, the mapping table, alert rules, dashboard queries and docs/metrics.md
all name the same metrics and statuses. Lists kept apart drift (a rule accepts a name nothing
emits, so it starts cleanly and never fires). So each of them reads this module, and
tests/lagwatch/test_vocabulary.py checks it against what the collectors really emit.

Adding a metric: one `Metric(...)` entry in :data:`METRICS`, then regenerate the table in
docs/metrics.md with ``python -m lagwatch.vocabulary``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Source(StrEnum):
    """Sample sources (contract 1): who measured the value. A member is its own string on the wire."""

    JMX = "jmx"  # a broker's or client's JMX, read by jpype or jmxquery
    PROM = "prom"  # the Prometheus JMX exporter's text format
    ADMIN = "admin"  # the Kafka Admin API (offsets, groups, members)
    COMMITLOG = "commitlog"  # commits read from __consumer_offsets as they happen
    PROBE = "probe"  # an end-to-end probe record
    HEARTBEAT = "heartbeat"  # a collector instance's own counters


#: Every source, as the plain strings the Spark job checks records against.
SOURCES: tuple[str, ...] = tuple(source.value for source in Source)
JMX_SOURCES: tuple[str, ...] = (Source.JMX.value, Source.PROM.value)
#: Sources that scrape a configured target (and so publish `up` and `scrape_duration_seconds`).
TARGET_SOURCES: tuple[str, ...] = (*JMX_SOURCES, Source.ADMIN.value)


#: The per group-partition copy of log_start_offset: per group so it reaches the group's lag state.
GROUP_LOG_START_METRIC = "group_log_start_offset"
#: A partition's size on disk per group-partition, likewise (the retention margin's size limit).
GROUP_SIZE_METRIC = "group_partition_size_bytes"
#: A share group's partition (KIP-932): its share-partition start offset and share lag. The lag
#: judgement reads them as it reads a consumer group's committed offset and lag (docs/share-groups.md).
SHARE_START_METRIC, SHARE_LAG_METRIC = "share_start_offset", "share_group_lag"
#: Groups known to exist that the monitoring principal may not describe (collectors/admin/group_visibility.py).
GROUPS_NOT_VISIBLE_METRIC = "consumer_groups_not_visible"
#: A topic's retention settings as the broker applies them (DescribeConfigs): what decides when
#: the records under a group's committed offset are deleted (spark_jobs/lag/retention.py).
CLEANUP_POLICY_METRIC, RETENTION_MS_METRIC, RETENTION_BYTES_METRIC = (
    "topic_cleanup_policy",
    "topic_retention_ms",
    "topic_retention_bytes",
)
RETENTION_METRICS: tuple[str, ...] = (CLEANUP_POLICY_METRIC, RETENTION_MS_METRIC, RETENTION_BYTES_METRIC)
#: topic_cleanup_policy's value per `cleanup.policy` (as the broker lists it, sorted): only a
#: policy with "delete" deletes by time or size; "compact" alone keeps every key's newest record.
CLEANUP_POLICY_CODE: dict[str, int] = {"delete": 1, "compact": 2, "compact,delete": 3}
#: The value of topic_retention_ms / topic_retention_bytes that means "no limit" (Kafka's -1).
UNLIMITED = -1


@dataclass(frozen=True)
class Metric:
    """One canonical metric: what a sample with this `metric` name means."""

    name: str
    kind: str  # counter (cumulative, rates are computed downstream) | gauge (a point value)
    unit: str
    #: Label fields a sample of this metric may set (any other label is null).
    labels: tuple[str, ...]
    #: Sample `source` values that publish it.
    sources: tuple[str, ...]
    meaning: str


METRICS: tuple[Metric, ...] = (
    # Broker JMX / Prometheus exporter (collectors/jmx/mapping.py maps MBeans onto these).
    Metric("messages_in_total", "counter", "messages", ("broker", "topic"), JMX_SOURCES,
           "Records appended to the log (per topic when `topic` is set, else all topics)"),
    Metric("bytes_in_total", "counter", "bytes", ("broker", "topic"), JMX_SOURCES,
           "Bytes received from producers (per topic when `topic` is set)"),
    Metric("bytes_out_total", "counter", "bytes", ("broker", "topic"), JMX_SOURCES,
           "Bytes sent to consumers and followers (per topic when `topic` is set)"),
    Metric("leader_elections_total", "counter", "elections", ("broker",), JMX_SOURCES,
           "Leader elections (ZooKeeper-mode controllers only; KRaft brokers have no such MBean)"),
    Metric("unclean_leader_elections_total", "counter", "elections", ("broker",), JMX_SOURCES,
           "Unclean leader elections, data loss possible (ZooKeeper mode and Kafka 4.x; not on 3.8 KRaft)"),
    Metric("isr_shrinks_total", "counter", "shrinks", ("broker",), JMX_SOURCES,
           "ISR shrinks"),
    Metric("isr_expands_total", "counter", "expands", ("broker",), JMX_SOURCES,
           "ISR expands"),
    Metric("partition_count", "gauge", "partitions", ("broker",), TARGET_SOURCES,
           "Partition replicas hosted by the broker"),
    Metric("leader_count", "gauge", "partitions", ("broker",), TARGET_SOURCES,
           "Partitions the broker leads"),
    Metric("under_replicated_partitions", "gauge", "partitions", ("broker", "topic"), TARGET_SOURCES,
           "Partitions whose ISR is smaller than the replica set (JMX: per broker; admin: cluster or per topic)"),
    Metric("under_min_isr_partitions", "gauge", "partitions", ("broker",), JMX_SOURCES,
           "Led partitions whose ISR is below min.insync.replicas"),
    Metric("active_controller_count", "gauge", "controllers", ("broker",), JMX_SOURCES,
           "1 on the active controller, else 0 (the cluster sum must be 1)"),
    Metric("offline_partitions", "gauge", "partitions", ("broker",), TARGET_SOURCES,
           "Partitions without a leader (JMX: reported by the active controller; admin: cluster)"),
    Metric("request_handler_avg_idle_percent", "gauge", "ratio", ("broker",), JMX_SOURCES,
           "Share of time the request handler threads are idle, 0..1"),
    Metric("network_processor_avg_idle_percent", "gauge", "ratio", ("broker",), JMX_SOURCES,
           "Share of time the network processor threads are idle, 0..1"),
    Metric("records_lag_max", "gauge", "records", ("broker", "client_id"), JMX_SOURCES,
           "Consumer client: largest partition lag in its sample window"),
    Metric("records_consumed_rate", "gauge", "records/s", ("broker", "client_id"), JMX_SOURCES,
           "Consumer client: records consumed per second"),
    # Admin API (collectors/admin/samples.py).
    Metric("broker_count", "gauge", "brokers", (), (Source.ADMIN,),
           "Brokers in the cluster metadata"),
    Metric("controller_id", "gauge", "broker id", (), (Source.ADMIN,),
           "Broker id the metadata names as controller"),
    Metric("topic_partitions", "gauge", "partitions", ("topic",), (Source.ADMIN,),
           "Partitions of the topic"),
    Metric("log_end_offset", "counter", "offset", ("topic", "partition"), (Source.ADMIN,),
           "Log-end offset (ListOffsets latest)"),
    Metric("log_start_offset", "gauge", "offset", ("topic", "partition"), (Source.ADMIN,),
           "Log start offset (ListOffsets earliest): retention deletes below it; a recreated topic moves it back"),
    Metric(CLEANUP_POLICY_METRIC, "gauge", "policy code", ("topic",), (Source.ADMIN,),
           "cleanup.policy: 1 delete, 2 compact (retention never deletes), 3 compact,delete; read with "
           "DescribeConfigs when the topic appears and every collect.topic_config_refresh_s"),
    Metric(RETENTION_MS_METRIC, "gauge", "milliseconds", ("topic",), (Source.ADMIN,),
           "retention.ms: a segment is deleted once its newest record is older than this; -1 = no time limit"),
    Metric(RETENTION_BYTES_METRIC, "gauge", "bytes", ("topic",), (Source.ADMIN,),
           "retention.bytes: per partition, the oldest segments are deleted beyond this size; -1 = no size limit"),
    Metric(GROUP_LOG_START_METRIC, "gauge", "offset", ("group_id", "topic", "partition"), (Source.ADMIN,),
           "log_start_offset of a partition the group has committed on, read in the cycle of its committed_offset"),
    Metric(GROUP_SIZE_METRIC, "gauge", "bytes", ("group_id", "topic", "partition"), (Source.ADMIN,),
           "Size on disk of the leader's replica (DescribeLogDirs) of a partition the group has committed on, read "
           "in the cycle of its committed_offset; only for topics with retention.bytes set (the size limit)"),
    Metric("committed_offset", "counter", "offset", ("group_id", "topic", "partition"),
           (Source.ADMIN, Source.COMMITLOG),
           "The group's committed offset: per cycle (admin), and every commit at its commit time (commitlog)"),
    Metric("commit_log_in_use", "gauge", "0/1", (), (Source.COMMITLOG,),
           "1 when the cycle's committed offsets came from __consumer_offsets, 0 when from OffsetFetch"),
    Metric("commit_log_records_skipped_total", "counter", "records", ("client_id",), (Source.COMMITLOG,),
           "__consumer_offsets records the reader skipped: all (no label), per record type (client_id = the type)"),
    Metric("consumer_lag", "gauge", "records", ("group_id", "topic", "partition"), (Source.ADMIN,),
           "log_end_offset − committed_offset read in the same cycle; never negative"),
    Metric("consumer_lag_negative", "gauge", "flag (1)", ("group_id", "topic", "partition"), (Source.ADMIN,),
           "Data-quality event: committed offset beyond the log end (no consumer_lag then)"),
    Metric("consumer_group_members", "gauge", "members", ("group_id",), (Source.ADMIN, Source.COMMITLOG),
           "Members of the group (DescribeConsumerGroups; commitlog: after each change, at its record's time)"),
    Metric("consumer_group_state", "gauge", "state code", ("group_id",), (Source.ADMIN, Source.COMMITLOG),
           "Group state code: 0 Unknown, 1 Empty, 2 Stable, 3 PreparingRebalance, 4 CompletingRebalance, 5 Dead, "
           "6 Assigning, 7 Reconciling (the last two: consumer-protocol groups, KIP-848)"),
    Metric("consumer_group_type", "gauge", "type code", ("group_id",), (Source.ADMIN, Source.COMMITLOG),
           "Group protocol code: 1 classic, 2 consumer (KIP-848), 3 share, 4 streams; sent where the broker says it"),
    Metric(GROUPS_NOT_VISIBLE_METRIC, "gauge", "groups", (), (Source.ADMIN,),
           "Consumer groups known to exist (listed, in the commit log, or named in groups_allow) that the "
           "principal may not describe (no Describe ACL): not described, and no OffsetFetch lag; the log names them"),
    Metric(SHARE_START_METRIC, "counter", "offset", ("group_id", "topic", "partition"), (Source.ADMIN,),
           "A share group's share-partition start offset: every record below it is acknowledged (KIP-932)"),
    Metric(SHARE_LAG_METRIC, "gauge", "records", ("group_id", "topic", "partition"), (Source.ADMIN,),
           "A share group's records from the start offset to the log end not yet acknowledged (the broker's count, "
           "DescribeShareGroupOffsets v1)"),
    Metric("partition_assigned", "gauge", "flag (1)",
           ("group_id", "topic", "partition", "client_id", "member_id", "host"), (Source.ADMIN, Source.COMMITLOG),
           "A group member owns the partition; the labels name it (DescribeConsumerGroups, or the commit log)"),
    Metric("partition_pending", "gauge", "flag (1)",
           ("group_id", "topic", "partition", "client_id", "member_id", "host"), (Source.ADMIN, Source.COMMITLOG),
           "Consumer (KIP-848) group: the partition is in a member's target assignment but not yet owned by it "
           "(not reconciled); the labels name the member that will own it"),
    Metric("consumer_group_epoch", "gauge", "epoch", ("group_id",), (Source.COMMITLOG,),
           "Consumer (KIP-848) group's epoch (bumped by every membership or subscription change), from the commit log"),
    Metric("consumer_group_rebalances_total", "counter", "rebalances", ("group_id",), (Source.COMMITLOG,),
           "Rebalances the coordinator recorded for the group: a classic group's generation, a consumer (KIP-848) "
           "group's epoch; from the commit log, at each change (its increase over a window is the rebalances in it)"),
    Metric("consumer_group_member_epoch", "gauge", "epoch", ("group_id", "client_id", "member_id", "host"),
           (Source.COMMITLOG,),
           "Consumer (KIP-848) group member's epoch: the group epoch it has reconciled to (below the group "
           "epoch: still reconciling), from the commit log"),
    # Added by the runner for every scrape target (source = the target's).
    Metric("up", "gauge", "0/1", ("broker", "client_id"), TARGET_SOURCES,
           "1 when the target answered within its timeout"),
    Metric("scrape_duration_seconds", "gauge", "seconds", ("broker", "client_id"), TARGET_SOURCES,
           "Wall time of the target's scrape"),
    # Collector heartbeat (client_id = collector instance id).
    Metric("collector_samples_produced_total", "counter", "samples", ("client_id",), (Source.HEARTBEAT,),
           "Samples handed to the producer"),
    Metric("collector_samples_delivered_total", "counter", "samples", ("client_id",), (Source.HEARTBEAT,),
           "Samples the transport broker acknowledged"),
    Metric("collector_samples_failed_total", "counter", "samples", ("client_id",), (Source.HEARTBEAT,),
           "Samples whose delivery failed"),
    Metric("collector_targets_assigned", "gauge", "targets", ("client_id",), (Source.HEARTBEAT,),
           "Scrape targets this collector instance owns now"),
)  # fmt: skip

METRIC_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
METRIC_NAMES: frozenset[str] = frozenset(METRIC_BY_NAME)


def metric(name: str) -> Metric:
    """The registered metric, or a KeyError that names the unregistered name."""
    try:
        return METRIC_BY_NAME[name]
    except KeyError:
        raise KeyError(f"metric {name!r} is not in lagwatch.vocabulary") from None


def require(*names: str) -> tuple[str, ...]:
    """`names` unchanged, after checking each is registered: for code that selects metrics by name."""
    for name in names:
        metric(name)
    return names


@dataclass(frozen=True)
class BrokerEvent:
    """A broker health event a group's status reason names (spark_jobs/broker_events.py)."""

    metric: str
    #: ABOVE_ZERO: a gauge sample > 0; INCREASE: a counter rose between two samples of its
    #: series; BECAME_ONE: the gauge went from 0 to 1 (this broker became the active controller).
    rule: str
    #: What a reason calls one ("under-replicated partition", plural adds "s"); for BECAME_ONE
    #: what the broker did.
    noun: str


ABOVE_ZERO, INCREASE, BECAME_ONE = "above_zero", "increase", "became_one"
#: The broker event metrics, in the order a reason lists them. Only samples without a topic
#: label count: per-topic admin gauges repeat the cluster-wide one.
BROKER_EVENTS: tuple[BrokerEvent, ...] = (
    BrokerEvent(require("offline_partitions")[0], ABOVE_ZERO, "offline partition"),
    BrokerEvent(require("under_min_isr_partitions")[0], ABOVE_ZERO, "under-min-ISR partition"),
    BrokerEvent(require("under_replicated_partitions")[0], ABOVE_ZERO, "under-replicated partition"),
    BrokerEvent(require("unclean_leader_elections_total")[0], INCREASE, "unclean leader election"),
    BrokerEvent(require("leader_elections_total")[0], INCREASE, "leader election"),
    BrokerEvent(require("isr_shrinks_total")[0], INCREASE, "ISR shrink"),
    BrokerEvent(require("active_controller_count")[0], BECAME_ONE, "became the active controller"),
)
BROKER_EVENT_METRICS: tuple[str, ...] = tuple(event.metric for event in BROKER_EVENTS)


def names_from(source: str) -> tuple[str, ...]:
    """Registered names a source publishes, in registry order."""
    return tuple(m.name for m in METRICS if source in m.sources)


def check_sample(name: str, kind: str, source: str) -> None:
    """Refuse a sample the vocabulary does not describe (ValueError naming what is wrong)."""
    registered = METRIC_BY_NAME.get(name)
    if registered is None:
        raise ValueError(f"metric {name!r} is not in lagwatch.vocabulary")
    if kind != registered.kind:
        raise ValueError(f"metric {name!r} is a {registered.kind}, not a {kind}")
    if source not in registered.sources:
        raise ValueError(f"metric {name!r} is not published by source {source!r} ({', '.join(registered.sources)})")


@dataclass(frozen=True)
class Status:
    """A lag status (lag_1m, group_status) and what it tells the operator."""

    name: str
    meaning: str


#: Least severe first. REWIND (offsets went back) is worth a look but usually heals, so it ranks
#: below a consumer that no longer moves (STALL) or no longer commits (STOP); ERR (the status
#: could not be judged) ranks above them because nothing else about the group can be trusted;
#: LOSS ranks worst: it is the one status that is certain and cannot heal (the records are gone).
STATUSES: tuple[Status, ...] = (
    Status("OK", "caught up, or consuming without a warning sign"),
    Status("WARN", "lag rising over the window, or above a per-group threshold"),
    Status("REWIND", "the committed offset went back"),
    Status("STALL", "lag > 0 and the committed offset not moving while a member owns it or commits keep coming"),
    Status("STOP", "lag > 0 and the group left empty, or no commit for longer than stop_after_s"),
    Status("ERR", "the status could not be judged"),
    Status("LOSS", "the committed offset is below the log start: retention deleted records the group never read"),
)
STATUS_ORDER: tuple[str, ...] = tuple(s.name for s in STATUSES)
STATUS_SEVERITY: dict[str, int] = {name: rank for rank, name in enumerate(STATUS_ORDER)}


def status_rank(name: str) -> int:
    """Severity of a status (0 = OK); ValueError naming an unknown status."""
    try:
        return STATUS_SEVERITY[name]
    except KeyError:
        raise ValueError(f"unknown status {name!r} ({' < '.join(STATUS_ORDER)})") from None


# ---------------------------------------------------------------------------------------
# docs/metrics.md: the generated part sits between these markers.

DOCS_BEGIN = "<!-- vocabulary:begin (generated by `python -m lagwatch.vocabulary`; edit lagwatch/vocabulary.py) -->"
DOCS_END = "<!-- vocabulary:end -->"


def _cell(items: Iterable[str]) -> str:
    return ", ".join(items) or "-"


def markdown() -> str:
    """The metric and status tables docs/metrics.md shows, generated from this module."""
    lines = [
        "| metric | kind | unit | labels | sources | meaning |",
        "|---|---|---|---|---|---|",
        *(
            f"| `{m.name}` | {m.kind} | {m.unit} | {_cell(m.labels)} | {_cell(m.sources)} | {m.meaning} |"
            for m in METRICS
        ),
        "",
        "Lag statuses, least severe first (a group's status is its worst partition's):",
        "",
        "| status | severity | meaning |",
        "|---|---|---|",
        *(f"| {s.name} | {STATUS_SEVERITY[s.name]} | {s.meaning} |" for s in STATUSES),
    ]
    return "\n".join(lines)


def _docs_block() -> str:
    return f"{DOCS_BEGIN}\n{markdown()}\n{DOCS_END}"


def render_docs(text: str) -> str:
    """`text` (docs/metrics.md) with its generated block replaced by the current tables."""
    start, end = text.index(DOCS_BEGIN), text.index(DOCS_END) + len(DOCS_END)
    return text[:start] + _docs_block() + text[end:]


def main() -> None:
    """Rewrite the generated block of docs/metrics.md in place."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
    path.write_text(render_docs(path.read_text()))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
