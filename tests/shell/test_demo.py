"""The demo's groups really behave as advertised on a real broker (offsets read back), and
`lagwatch demo` refuses a configured cluster before connecting to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from harness.processes import run_lagwatch
from lagwatch import exit_codes
from lagwatch.config import Config
from shell.broker import free_port
from shell.demo import DEMO_PREFIX, GROUPS, TOPICS, DemoWorkload, exporter_text


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

    by = {g.behaviour: g for g in GROUPS}
    healthy, slow, stopped, stalled = by["healthy"], by["slow"], by["stopped"], by["stalled"]
    assert committed[healthy.group_id] == ends[healthy.topic]  # healthy: caught up
    assert 0 < committed[slow.group_id] < ends[slow.topic]  # slow: behind
    assert ends[stopped.topic] - committed[stopped.group_id] > 0  # stopped committing after 20 ticks
    assert committed[stalled.group_id] == 10  # stalled at offset 10
    # The simulator reports exactly what was produced.
    assert f"kafka_server_brokertopicmetrics_messagesin_total {sum(ends.values())}" in exporter_text(workload.counters)


def test_every_demo_topic_and_group_is_named_as_the_demo_s() -> None:
    """Never mistaken for a real application's, nor for Lagwatch's own `lagwatch.*` topics."""
    names = [t.name for t in TOPICS] + [g.group_id for g in GROUPS]
    assert all(name.startswith(f"{DEMO_PREFIX}.") or name.startswith(f"{DEMO_PREFIX}-") for name in names), names
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(
    "cluster",
    ['[cluster]\nname = "prod"\nbootstrap_servers = "127.0.0.1:{port}"\n',
     '[[clusters]]\nname = "prod"\nbootstrap_servers = "127.0.0.1:{port}"\n'],
    ids=["cluster", "clusters"],
)  # fmt: skip
def test_demo_refuses_a_configured_cluster_before_connecting(tmp_path: Path, cluster: str) -> None:
    """Nothing listens on the port: a demo that tried to connect would exit 3 (Kafka unreachable)."""
    config = tmp_path / "config.toml"
    config.write_text(cluster.format(port=free_port()) + f'[lake]\npath = "{tmp_path / "lake"}"\n')
    done = run_lagwatch(config, "demo", "--duration-s", "1", timeout_s=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stdout + done.stderr
    assert "runs only on the embedded broker" in done.stderr
    assert "create topics and commit offsets as consumer groups" in done.stderr
    assert "'prod'" in done.stderr
