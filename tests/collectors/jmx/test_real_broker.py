"""Both remote-JMX backends against the real Apache Kafka broker's own MBeans.

Every broker metric of the mapping table is either read with a plausible value or marked
ZooKeeper-only (and then really absent on a Kafka 3.x KRaft broker; 4.x KRaft controllers
register the unclean-elections meter again), so the table cannot claim an MBean that Kafka does
not register, and a mark cannot go stale.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from collectors.base import ScrapeResult
from collectors.jmx.mapping import metrics_for
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from tests.collectors.jmx.support import scrape, values

BACKENDS = ["jpype", "jmxquery"]
PRODUCED = {0: 120, 1: 45, 2: 7}


def _replicas_and_leaders(bootstrap: str, broker_id: int) -> tuple[int, int]:
    """Partitions hosted and led by `broker_id` as the Admin API reports them (internal topics included)."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    partitions = [p for t in metadata.topics.values() for p in t.partitions.values()]
    return sum(broker_id in p.replicas for p in partitions), sum(p.leader == broker_id for p in partitions)


def _consume_all(bootstrap: str, topic: str, expected: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in PRODUCED])
        seen = 0
        while seen < expected:
            messages = consumer.consume(500, timeout=10)
            assert messages, f"only {seen} of {expected} records came back"
            seen += sum(1 for m in messages if not m.error())
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def traffic_topic(broker: RealKafkaBroker) -> str:
    """A topic with a known number of records produced and read back once."""
    topic = "jmx-real-traffic"
    workload = KafkaWorkload(broker.bootstrap_servers)
    workload.create_topic(topic, len(PRODUCED))
    workload.produce(topic, PRODUCED)
    _consume_all(broker.bootstrap_servers, topic, sum(PRODUCED.values()))
    return topic


@pytest.fixture
def scrape_real(broker: RealKafkaBroker) -> Callable[[str], ScrapeResult]:
    return lambda backend: scrape(backend=backend, host="127.0.0.1", port=broker.jmx_port, broker="1")


def _absent_on(version: tuple[int, int, int]) -> set[str]:
    """The ZooKeeper-only marked metrics this KRaft broker really lacks."""
    if version >= (4, 0, 0):
        return {"leader_elections_total"}
    return {"leader_elections_total", "unclean_leader_elections_total"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_mapped_broker_metric_is_read_or_marked_zookeeper_only(
    backend: str, broker: RealKafkaBroker, scrape_real: Callable[[str], ScrapeResult], traffic_topic: str
) -> None:
    result = scrape_real(backend)
    assert result.ok, result.errors
    assert result.errors == []
    read = {metric for metric, _topic, _client in values(result)}
    definitions = metrics_for("broker")
    zookeeper_only = {d.metric for d in definitions if d.zookeeper_only}
    assert zookeeper_only == {"leader_elections_total", "unclean_leader_elections_total"}
    absent = _absent_on(broker.version)
    assert absent <= zookeeper_only
    assert read == {d.metric for d in definitions} - absent
    assert not read & absent


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_agree_with_the_traffic_and_the_admin_api(
    backend: str, broker: RealKafkaBroker, scrape_real: Callable[[str], ScrapeResult], traffic_topic: str
) -> None:
    hosted_before = _replicas_and_leaders(broker.bootstrap_servers, 1)
    read = values(scrape_real(backend))
    assert _replicas_and_leaders(broker.bootstrap_servers, 1) == hosted_before  # nothing changed meanwhile

    assert read[("messages_in_total", traffic_topic, None)] == sum(PRODUCED.values())
    assert read[("messages_in_total", None, None)] >= sum(PRODUCED.values())
    assert read[("bytes_in_total", traffic_topic, None)] > sum(PRODUCED.values())  # every record has bytes
    assert read[("bytes_out_total", traffic_topic, None)] > 0  # the records were read back once
    assert (read[("partition_count", None, None)], read[("leader_count", None, None)]) == hosted_before
    assert read[("active_controller_count", None, None)] == 1
    for healthy_zero in ("under_replicated_partitions", "under_min_isr_partitions", "offline_partitions"):
        assert read[(healthy_zero, None, None)] == 0, healthy_zero
    assert read[("isr_shrinks_total", None, None)] == 0  # one broker: nothing to shrink from
    if "unclean_leader_elections_total" not in _absent_on(broker.version):
        assert read[("unclean_leader_elections_total", None, None)] == 0  # one replica: never unclean
    assert 0 <= read[("network_processor_avg_idle_percent", None, None)] <= 1
    assert read[("request_handler_avg_idle_percent", None, None)] >= 0
