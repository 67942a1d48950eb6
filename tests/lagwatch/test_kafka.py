"""Topics Lagwatch creates get their replication factor and retention from config, on a real broker."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from lagwatch.config import Config, ConfigError
from lagwatch.kafka import ensure_internal_topic, ensure_samples_topic, transport_client_config


def _replicas_and_retention(config: Config, topic: str) -> tuple[set[int], str]:
    admin = AdminClient(transport_client_config(config))
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions.values()
    [described] = [f.result(10) for f in admin.describe_configs([ConfigResource("topic", topic)]).values()]
    return {len(p.replicas) for p in partitions}, described["retention.ms"].value


def test_default_replication_is_min_3_and_live_brokers_and_retention_comes_from_config(
    make_config: Callable[..., Config], unique: Callable[[str], str]
) -> None:
    config = make_config(transport={"samples_retention_hours": 2, "internal_retention_hours": 0.5})
    ensure_samples_topic(config)
    coordination = unique("coordination")
    ensure_internal_topic(config, coordination, 3)
    assert _replicas_and_retention(config, config.transport.samples_topic) == ({1}, str(2 * 3_600_000))
    assert _replicas_and_retention(config, coordination) == ({1}, str(1_800_000))


def test_replication_above_the_live_brokers_names_the_key(make_config: Callable[..., Config]) -> None:
    config = make_config(transport={"replication_factor": 3})
    with pytest.raises(ConfigError, match=r"transport\.replication_factor = 3.*1 live broker"):
        ensure_samples_topic(config)
    admin = AdminClient(transport_client_config(config))
    assert config.transport.samples_topic not in admin.list_topics(timeout=10).topics
