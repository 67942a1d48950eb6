"""The demo's groups really behave as advertised on a real broker (offsets read back)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition

from lagwatch.config import Config
from shell.demo import GROUPS, TOPICS, DemoWorkload, exporter_text


def _committed(bootstrap: str, group_id: str, topic: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id})
    try:
        offsets = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        return sum(max(0, tp.offset) for tp in offsets)
    finally:
        consumer.close()


def test_groups_behave_and_simulator_follows_real_counts(make_config: Callable[..., Config]) -> None:
    config = make_config(demo={"rate": 40})
    workload = DemoWorkload(config)
    workload.setup()
    try:
        for _ in range(24):  # past the 20 ticks after which the stopped group stops
            workload.tick()
    finally:
        workload.close()
    bootstrap = config.cluster.bootstrap_servers
    ends = {t.name: sum(workload._end.get((t.name, p), 0) for p in range(t.partitions)) for t in TOPICS}
    partitions = {t.name: t.partitions for t in TOPICS}
    committed = {g.group_id: _committed(bootstrap, g.group_id, g.topic, partitions[g.topic]) for g in GROUPS}

    assert committed["orders-service"] == ends["demo.orders"]  # healthy: caught up
    assert 0 < committed["orders-analytics"] < ends["demo.orders"]  # slow: behind
    stopped_lag = ends["demo.payments"] - committed["payments-archiver"]
    assert stopped_lag > 0  # stopped committing after 20 ticks while production went on
    assert committed["audit-indexer"] == 10  # stalled at offset 10
    # The simulator reports exactly what was produced.
    assert f"kafka_server_brokertopicmetrics_messagesin_total {sum(ends.values())}" in exporter_text(workload.counters)
