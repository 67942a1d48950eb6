"""Helpers shared by the JMX backend tests: scrape through the real collector, index samples."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collectors.base import SampleFactory, ScrapeResult
from collectors.jmx.collector import JmxCollector
from collectors.jmx.mapping import MetricDef
from lagwatch.config import JmxTarget

MAKE = SampleFactory(cluster="test", collector="jmx-test")
TS = 1_700_000_000_000


def scrape(definitions: Sequence[MetricDef] | None = None, timeout_s: float = 10, **target: Any) -> ScrapeResult:
    """One collect() through JmxCollector for a target built from keyword arguments."""
    target.setdefault("broker", "1")
    collector = JmxCollector(JmxTarget(**target), timeout_s=timeout_s, definitions=definitions)
    try:
        return collector.collect(TS, MAKE)
    finally:
        collector.close()


def values(result: ScrapeResult) -> dict[tuple[str, str | None, str | None], float]:
    """(metric, topic, client_id) -> value; fails on duplicates so a doubled sample is caught."""
    indexed: dict[tuple[str, str | None, str | None], float] = {}
    for sample in result.samples:
        key = (sample.metric, sample.topic, sample.client_id)
        assert key not in indexed, f"duplicate sample {key}"
        indexed[key] = sample.value
    return indexed


def broken_definition(object_name: str, metric: str = "bad_metric") -> MetricDef:
    return MetricDef(metric, object_name, "Value", "broker")


def set_known_values(double: Any, seed: int) -> dict[tuple[str, str | None, str | None], float]:
    """Set distinct values on the double's MBeans; return the samples a scrape must yield."""
    settings = {
        ("messages_in", "messages_in_total", None): seed + 1,
        ("messages_in:orders", "messages_in_total", "orders"): seed + 2,
        ("messages_in:payments", "messages_in_total", "payments"): seed + 3,
        ("bytes_in:orders", "bytes_in_total", "orders"): seed + 4,
        ("bytes_out", "bytes_out_total", None): seed + 5,
        ("leader_elections", "leader_elections_total", None): seed + 6,
        ("unclean_leader_elections", "unclean_leader_elections_total", None): seed + 7,
        ("isr_shrinks", "isr_shrinks_total", None): seed + 8,
        ("isr_expands", "isr_expands_total", None): seed + 9,
        ("partition_count", "partition_count", None): seed + 10,
        ("leader_count", "leader_count", None): seed + 11,
        ("under_replicated", "under_replicated_partitions", None): seed + 12,
        ("under_min_isr", "under_min_isr_partitions", None): seed + 13,
        ("active_controller", "active_controller_count", None): 1,
        ("offline_partitions", "offline_partitions", None): seed + 14,
        ("request_handler_idle", "request_handler_avg_idle_percent", None): 0.25 + seed / 1e6,
        ("network_idle", "network_processor_avg_idle_percent", None): 0.5 + seed / 1e6,
    }
    expected = {}
    for (key, metric, topic), value in settings.items():
        double.set(key, value)
        expected[(metric, topic, None)] = float(value)
    return expected


def cluster_id_definition() -> MetricDef:
    """Kafka's ClusterId gauge: a String value, so never a number (and quotes break jmxquery's JSON)."""
    return MetricDef("cluster_id", "kafka.server:type=KafkaServer,name=ClusterId", "Value", "broker")
