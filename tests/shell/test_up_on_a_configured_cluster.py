"""On a configured cluster (the real broker, Kafka 4.3.1 and again 3.8.0 in `make test`),
`lagwatch up` with no flags writes nothing into it but Lagwatch's own `lagwatch.*` topics and
groups, and `lagwatch demo` is refused before it connects."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from harness.broker_names import OWN_PREFIXES, added_since, broker_names
from harness.config_file import section_lines
from harness.kafka_workload import KafkaWorkload
from harness.polling import wait_until
from harness.processes import run_lagwatch, start_lagwatch
from harness.real_kafka import RealKafkaBroker
from lagwatch import exit_codes
from shell.broker import free_port

SAMPLES_TOPIC = "lagwatch.samples"  # the default, which this test leaves alone
UP_TIMEOUT_S = 300
STOP_TIMEOUT_S = 20


def samples_published(bootstrap: str) -> int:
    """Records in Lagwatch's samples topic (0 until the collectors create and fill it)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-probe", "enable.auto.commit": False})
    try:
        if SAMPLES_TOPIC not in consumer.list_topics(timeout=10).topics:
            return 0
        partitions = consumer.list_topics(SAMPLES_TOPIC, timeout=10).topics[SAMPLES_TOPIC].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(SAMPLES_TOPIC, p), timeout=10)[1] for p in partitions)
    finally:
        consumer.close()


def write_config(tmp_path: Path, broker: RealKafkaBroker) -> Path:
    sections = {
        "cluster": {"name": "watched", "bootstrap_servers": broker.bootstrap_servers},
        "collect": {"interval_s": 2, "timeout_s": 2},
        "spark": {"trigger_s": 2},
        "dashboard": {"port": free_port()},
        "api": {"port": free_port()},
    }
    path = tmp_path / "config.toml"
    path.write_text("\n".join(section_lines(sections)) + "\n")
    return path


def test_up_with_no_flags_adds_only_lagwatch_names_and_demo_is_refused(
    broker: RealKafkaBroker, kafka: KafkaWorkload, unique: Callable[[str], str], tmp_path: Path
) -> None:
    topic, group = unique("watched-app"), unique("watched-app-group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, {0: 20, 1: 5})
    kafka.commit(group, topic, {0: 10, 1: 5})
    config = write_config(tmp_path, broker)
    before = broker_names(broker.bootstrap_servers)

    refused = run_lagwatch(config, "demo", "--duration-s", "5")
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
    assert "runs only on the embedded broker" in refused.stderr

    log = tmp_path / "up.log"
    up = start_lagwatch(config, log, "up")
    try:
        wait_until(lambda: "Lagwatch is up" in log.read_text() or up.poll() is not None, UP_TIMEOUT_S, "Lagwatch is up")
        assert up.poll() is None, log.read_text()[-3000:]
        first = wait_until(lambda: samples_published(broker.bootstrap_servers), 60, "samples published")
        wait_until(lambda: samples_published(broker.bootstrap_servers) > first, 60, "a later collector cycle")
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            up.kill()
    time.sleep(1)  # a group that left is still listed; a group that was never joined never is

    added = added_since(before, broker.bootstrap_servers)
    assert SAMPLES_TOPIC in added.topics, added
    assert all(name.startswith((*OWN_PREFIXES, "__")) for name in added.topics), added.topics
    assert all(name.startswith(OWN_PREFIXES) for name in added.groups), added.groups
    text = log.read_text()
    assert "no demo: cluster watched is a configured cluster" in text and "demo ready" not in text, text[-3000:]
