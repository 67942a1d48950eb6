"""THE mapping table: Kafka MBean ObjectName + attribute, and Prometheus jmx_exporter names,
to Lagwatch's canonical metric names. The names, their kind and unit are registered in
:mod:`lagwatch.vocabulary`; docs/metrics.md lists this table.

Why one table: the three JMX backends (jmxquery, jpype, prometheus) must produce identical
samples for the same broker, so that a dashboard or alert never depends on how a broker was
scraped. Every backend reads `METRICS` and nothing else.

Exporter names: the JMX exporter has no fixed naming, so each metric accepts the spellings of
the common rule sets, derived from its MBean (see `exporter_names`):
- Strimzi / MSK open monitoring: ``kafka_server_brokertopicmetrics_messagesin_total`` (Meter
  Count, "PerSec" dropped, ``_total``), ``kafka_server_replicamanager_partitioncount`` (Gauge
  Value), ``kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent``;
- Confluent / one-rule-per-attribute configs: ``kafka_server_BrokerTopicMetrics_MessagesInPerSec_Count``,
  ``…_PartitionCount_Value``, ``…_RequestHandlerAvgIdlePercent_OneMinuteRate`` (case ignored);
- the exporter's default (no rules): ``kafka_server_BrokerTopicMetrics_Count{name="MessagesInPerSec"}``.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass, field

from lagwatch import vocabulary

#: ObjectName key property / exporter label -> sample label.
LABEL_KEYS: dict[str, str] = {
    "topic": "topic",
    "client-id": "client_id",
    "client_id": "client_id",
    "clientId": "client_id",
    "clientid": "client_id",
}


@dataclass(frozen=True)
class MetricDef:
    """One canonical metric read from one MBean attribute (a pattern may match many MBeans)."""

    metric: str  # a name registered in lagwatch.vocabulary
    object_name: str  # exact ObjectName, or a pattern with `*` values (one MBean per label value)
    attribute: str
    target: str  # broker | client: which kind of JMX target exposes it
    #: Extra exporter spellings beyond the derived ones (lower case).
    extra_exporter_names: tuple[str, ...] = field(default=())
    #: Registered by ZooKeeper-mode controllers and not by every KRaft broker (Kafka 3.8 has
    #: neither marked MBean; 4.x KRaft controllers register UncleanLeaderElectionsPerSec again),
    #: so its absence is expected, not a scrape error.
    zookeeper_only: bool = False

    @property
    def kind(self) -> str:
        return vocabulary.metric(self.metric).kind

    @property
    def unit(self) -> str:
        return vocabulary.metric(self.metric).unit

    @property
    def is_pattern(self) -> bool:
        return "*" in self.object_name or "?" in self.object_name

    @property
    def domain(self) -> str:
        return self.object_name.split(":", 1)[0]

    @functools.cached_property
    def properties(self) -> dict[str, str]:
        return object_name_properties(self.object_name)

    @functools.cached_property
    def label_keys(self) -> tuple[str, ...]:
        """Key properties whose value becomes a sample label (topic, client-id)."""
        return tuple(k for k in self.properties if k in LABEL_KEYS)

    def query(self) -> str:
        """`ObjectName/attribute`, the form jmxquery's jar and error messages use."""
        return f"{self.object_name}/{self.attribute}"


def _meter(metric: str, object_name: str, zookeeper_only: bool = False) -> MetricDef:
    return MetricDef(metric, object_name, "Count", "broker", zookeeper_only=zookeeper_only)


def _topic_meter(metric: str, name: str) -> list[MetricDef]:
    """All-topic MBean (topic label null) and per-topic MBeans (topic label set)."""
    base = f"kafka.server:type=BrokerTopicMetrics,name={name}"
    return [_meter(metric, base), _meter(metric, f"{base},topic=*")]


def _gauge(metric: str, object_name: str) -> MetricDef:
    return MetricDef(metric, object_name, "Value", "broker")


_CONSUMER_FETCH = "kafka.consumer:type=consumer-fetch-manager-metrics,client-id=*"

METRICS: tuple[MetricDef, ...] = (
    *_topic_meter("messages_in_total", "MessagesInPerSec"),
    *_topic_meter("bytes_in_total", "BytesInPerSec"),
    *_topic_meter("bytes_out_total", "BytesOutPerSec"),
    _meter(
        "leader_elections_total",
        "kafka.controller:type=ControllerStats,name=LeaderElectionRateAndTimeMs",
        zookeeper_only=True,
    ),
    _meter(
        "unclean_leader_elections_total",
        "kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec",
        zookeeper_only=True,
    ),
    _meter("isr_shrinks_total", "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec"),
    _meter("isr_expands_total", "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec"),
    _gauge("partition_count", "kafka.server:type=ReplicaManager,name=PartitionCount"),
    _gauge("leader_count", "kafka.server:type=ReplicaManager,name=LeaderCount"),
    _gauge("under_replicated_partitions", "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"),
    _gauge("under_min_isr_partitions", "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"),
    _gauge("active_controller_count", "kafka.controller:type=KafkaController,name=ActiveControllerCount"),
    _gauge("offline_partitions", "kafka.controller:type=KafkaController,name=OfflinePartitionsCount"),
    MetricDef(
        "request_handler_avg_idle_percent",
        "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent",
        "OneMinuteRate",  # a Yammer Meter: its one-minute rate is the idle share
        "broker",
        extra_exporter_names=("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",),
    ),
    MetricDef(
        "network_processor_avg_idle_percent",
        "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent",
        "Value",
        "broker",
        extra_exporter_names=("kafka_network_socketserver_networkprocessoravgidle_percent",),
    ),
    MetricDef(
        "records_lag_max",
        _CONSUMER_FETCH,
        "records-lag-max",
        "client",
        extra_exporter_names=("kafka_consumer_fetch_manager_records_lag_max",),
    ),
    MetricDef(
        "records_consumed_rate",
        _CONSUMER_FETCH,
        "records-consumed-rate",
        "client",
        extra_exporter_names=("kafka_consumer_fetch_manager_records_consumed_rate",),
    ),
)


def metrics_for(target_kind: str) -> tuple[MetricDef, ...]:
    """The definitions a broker target or a consumer-client target is scraped for."""
    return tuple(d for d in METRICS if d.target == target_kind)


_PROPERTY = re.compile(r'([^,=:*?"]+)=("(?:[^"\\]|\\.)*"|[^,]*)')


def object_name_properties(object_name: str) -> dict[str, str]:
    """Key properties of an ObjectName string (quoted values unquoted), in order."""
    _, _, props = object_name.partition(":")
    return {k: v[1:-1] if v.startswith('"') and v.endswith('"') else v for k, v in _PROPERTY.findall(props)}


@functools.lru_cache(maxsize=4096)
def object_name_problem(object_name: str) -> str | None:
    """Why `object_name` is not a valid JMX ObjectName (None when it is).

    Checked before a query because jmxquery's jar fails the whole batch on one malformed name
    (cached: the table is static, so each name is checked once per process). Mirrors
    javax.management.ObjectName's rules for the unquoted names Kafka uses.
    """
    domain, colon, props = object_name.partition(":")
    if not colon:
        return "missing ':' between domain and key properties"
    if not domain or any(c in domain for c in "\n"):
        return "empty domain"
    if not props:
        return "key properties cannot be empty"
    seen: set[str] = set()
    for part in _split_properties(props):
        if part == "*":
            continue
        key, eq, value = part.partition("=")
        if not eq or not key:
            return f"key property {part!r} is not key=value"
        if not value:
            return f"key property {key!r} has an empty value"
        if any(c in key for c in ':*?",='):
            return f"illegal character in key {key!r}"
        if not value.startswith('"') and any(c in value for c in ':",='):
            return f"illegal character in value {value!r} (quote it)"
        if key in seen:
            return f"duplicate key {key!r}"
        seen.add(key)
    return None


def _split_properties(props: str) -> list[str]:
    parts, current, quoted = [], "", False
    for char in props:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def sample_labels(definition: MetricDef, properties: dict[str, str]) -> dict[str, str]:
    """Sample labels (topic, client_id) from a matched MBean's key properties or exporter labels."""
    labels: dict[str, str] = {}
    for key, value in properties.items():
        label = LABEL_KEYS.get(key)
        if label and value:
            labels[label] = value
    return labels


def _snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def exporter_names(definition: MetricDef) -> set[str]:
    """Lower-case exporter metric names that mean this definition (see module docstring)."""
    props = definition.properties
    kind = props.get("type", "")
    name = props.get("name", "")
    attr = _snake(definition.attribute)
    base = _snake(f"{definition.domain}_{kind}_{name}") if name else _snake(f"{definition.domain}_{kind}")
    names = {f"{base}_{attr}", *definition.extra_exporter_names}
    if definition.attribute == "Count":
        short = _snake(f"{definition.domain}_{kind}_{re.sub('PerSec$', '', name)}")
        names |= {f"{base}_total", f"{short}_total", f"{short}_count"}
    if definition.attribute == "Value":
        names.add(base)
    return names


#: (lower-case exporter name, value of the exporter's `name` label or "") -> definitions.
def _build_exporter_index() -> dict[tuple[str, str], list[MetricDef]]:
    index: dict[tuple[str, str], list[MetricDef]] = {}
    for definition in METRICS:
        for exported in exporter_names(definition):
            index.setdefault((exported, ""), []).append(definition)
        props = definition.properties
        if "name" in props:  # the exporter's default naming: domain_type_attribute{name="…"}
            default = _snake(f"{definition.domain}_{props['type']}_{definition.attribute}")
            index.setdefault((default, props["name"].lower()), []).append(definition)
    return index


EXPORTER_INDEX: dict[tuple[str, str], list[MetricDef]] = _build_exporter_index()


def _candidates(lowered: str, labels: dict[str, str]) -> list[MetricDef]:
    return EXPORTER_INDEX.get((lowered, "")) or EXPORTER_INDEX.get((lowered, labels.get("name", "").lower()), [])


def lookup_exporter(name: str, labels: dict[str, str]) -> MetricDef | None:
    """The definition an exporter sample means, or None for metrics Lagwatch does not map.

    Among the definitions sharing a name (all-topic vs per-topic), the one whose label keys
    match the sample's labels wins, so `…_messagesin_total{topic="a"}` is per-topic.
    """
    lowered = name.lower()
    candidates = _candidates(lowered, labels)
    if not candidates and lowered.endswith("_total"):
        # prometheus_client's parser appends _total to every counter sample, so an exporter's
        # `# TYPE x_count counter` arrives as x_count_total.
        candidates = _candidates(lowered.removesuffix("_total"), labels)
    if not candidates:
        return None
    present = {LABEL_KEYS[k] for k, v in labels.items() if k in LABEL_KEYS and v}
    for definition in candidates:
        if {LABEL_KEYS[k] for k in definition.label_keys} == present:
            return definition
    return None


def matches(definition: MetricDef, object_name: str) -> bool:
    """Whether a concrete ObjectName is one the definition's name or pattern selects."""
    domain = object_name.split(":", 1)[0]
    if domain != definition.domain:
        return False
    wanted, actual = definition.properties, object_name_properties(object_name)
    if wanted.keys() != actual.keys():
        return False
    return all(fnmatch.fnmatchcase(actual[k], v) for k, v in wanted.items())
