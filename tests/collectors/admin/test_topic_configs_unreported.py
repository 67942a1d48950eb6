"""A broker that answers DescribeConfigs without the retention settings (tansu, the embedded
broker) costs its topics the retention margin, said once in the log, never as a cycle error."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory
from harness.kafka_workload import KafkaWorkload
from lagwatch.config import parse_config
from shell.broker import EmbeddedBroker


def test_retention_settings_missing_from_the_answer_are_logged_once(
    tansu: EmbeddedBroker, tansu_kafka: KafkaWorkload, unique: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = unique("unreported")
    tansu_kafka.create_topic(topic, 1)
    tansu_kafka.produce(topic, {0: 3})
    config = parse_config(
        {"cluster": {"name": "embedded", "bootstrap_servers": tansu.bootstrap_servers},
         "collect": {"timeout_s": 10, "topics_allow": [f"^{topic}$"], "topic_config_refresh_s": 0.001}},
        environ={},
    )  # fmt: skip
    collector = AdminCollector(config)
    make = SampleFactory(cluster="embedded", collector="test")
    caplog.set_level(logging.INFO, logger="collectors")
    try:
        results = [collector.collect(1_700_000_000_000 + i * 15_000, make) for i in range(2)]
    finally:
        collector.close()

    for result in results:
        assert not [e for e in result.errors if "topic retention" in e], result.errors
        assert [s for s in result.samples if s.topic == topic and s.metric == "log_end_offset"], "no offsets read"
    said = [r.getMessage() for r in caplog.records if "reports no retention settings" in r.getMessage()]
    assert len(said) == 1 and topic in said[0] and "not reported by the broker" in said[0], said
