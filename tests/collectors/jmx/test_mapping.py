"""The mapping table: canonical names, exporter spellings, ObjectName checks, docs in sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.jmx.mapping import (
    METRICS,
    lookup_exporter,
    matches,
    metrics_for,
    object_name_problem,
    object_name_properties,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"

BROKER_METRICS = {
    "messages_in_total",
    "bytes_in_total",
    "bytes_out_total",
    "leader_elections_total",
    "unclean_leader_elections_total",
    "partition_count",
    "leader_count",
    "under_replicated_partitions",
    "isr_shrinks_total",
    "isr_expands_total",
    "active_controller_count",
    "offline_partitions",
    "request_handler_avg_idle_percent",
    "network_processor_avg_idle_percent",
    "under_min_isr_partitions",
}


def test_every_canonical_metric_is_mapped_with_kind_and_unit() -> None:
    assert {d.metric for d in metrics_for("broker")} == BROKER_METRICS
    assert {d.metric for d in metrics_for("client")} == {"records_lag_max", "records_consumed_rate"}
    for definition in METRICS:
        assert definition.kind == ("counter" if definition.metric.endswith("_total") else "gauge"), definition
        assert definition.unit
        assert object_name_problem(definition.object_name) is None, definition


def test_topic_meters_have_all_topic_and_per_topic_definitions() -> None:
    messages = [d for d in METRICS if d.metric == "messages_in_total"]
    assert sorted(d.label_keys for d in messages) == [(), ("topic",)]
    per_topic = next(d for d in messages if d.label_keys)
    assert matches(per_topic, "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=orders")
    assert not matches(per_topic, "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec")
    assert not matches(per_topic, "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders")


@pytest.mark.parametrize(
    ("name", "labels", "metric", "label_keys"),
    [
        ("kafka_server_brokertopicmetrics_messagesin_total", {"topic": "a"}, "messages_in_total", ("topic",)),
        ("kafka_server_brokertopicmetrics_messagesin_total", {}, "messages_in_total", ()),
        ("kafka_server_BrokerTopicMetrics_MessagesInPerSec_Count", {"topic": "a"}, "messages_in_total", ("topic",)),
        ("kafka_server_BrokerTopicMetrics_Count", {"name": "BytesOutPerSec"}, "bytes_out_total", ()),
        ("kafka_controller_kafkacontroller_activecontrollercount", {}, "active_controller_count", ()),
        ("kafka_server_replicamanager_underreplicatedpartitions", {}, "under_replicated_partitions", ()),
        ("kafka_server_ReplicaManager_PartitionCount_Value", {}, "partition_count", ()),
        ("kafka_controller_controllerstats_leaderelectionrateandtimems_count", {}, "leader_elections_total", ()),
        ("kafka_network_socketserver_networkprocessoravgidle_percent", {}, "network_processor_avg_idle_percent", ()),
        (
            "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max",
            {"client_id": "c1"},
            "records_lag_max",
            ("client-id",),
        ),
    ],
)
def test_exporter_spellings_resolve_to_canonical_names(
    name: str, labels: dict[str, str], metric: str, label_keys: tuple[str, ...]
) -> None:
    definition = lookup_exporter(name, labels)
    assert definition is not None, name
    assert (definition.metric, definition.label_keys) == (metric, label_keys)


def test_unmapped_exporter_names_are_ignored() -> None:
    assert lookup_exporter("jvm_memory_bytes_used", {"area": "heap"}) is None
    assert lookup_exporter("kafka_server_brokertopicmetrics_failedproducerequests_total", {"topic": "a"}) is None


@pytest.mark.parametrize(
    "bad",
    [
        "kafka.server",
        "kafka.server:",
        "kafka.server:type=ReplicaManager,name",
        "kafka.server:type=ReplicaManager,name=",
        "kafka.server:type=A,type=B",
        ":type=A",
    ],
)
def test_malformed_object_names_are_named(bad: str) -> None:
    assert object_name_problem(bad)


def test_object_name_properties_unquote_values() -> None:
    assert object_name_properties('kafka.x:type=T,name="a,b",topic=t') == {"type": "T", "name": "a,b", "topic": "t"}


def test_docs_list_every_metric_and_source() -> None:
    text = DOCS.read_text()
    for definition in METRICS:
        assert f"`{definition.metric}`" in text, definition.metric
        assert definition.object_name in text, definition.object_name
        assert definition.attribute in text
