"""Client factory: every Kafka client Lagwatch makes gets its settings from here.

One place decides bootstrap servers, pass-through security settings (SASL/SSL go straight to
librdkafka) and the tansu workaround, so no part of the product hand-assembles client dicts.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from lagwatch.broker import TANSU_PRODUCER_SETTINGS, EmbeddedBroker
from lagwatch.config import Config

log = logging.getLogger(__name__)

#: Set by `lagwatch up` for its children: the bootstrap servers of the embedded tansu it runs.
EMBEDDED_BOOTSTRAP_ENV = "LAGWATCH_EMBEDDED_BOOTSTRAP"


class KafkaUnreachable(RuntimeError):
    """The named bootstrap servers did not answer."""


def cluster_client_config(config: Config) -> dict[str, Any]:
    """Settings for clients of the monitored cluster (admin collector, demo)."""
    return {"bootstrap.servers": config.cluster.bootstrap_servers, **config.cluster.client}


def transport_client_config(config: Config) -> dict[str, Any]:
    """Settings for clients of the transport cluster that carries the samples."""
    client = config.transport.client if config.transport.bootstrap_servers else config.cluster.client
    return {"bootstrap.servers": config.transport_servers(), **client}


def producer_config(config: Config) -> dict[str, Any]:
    """Idempotent, acks=all producer for samples; user producer settings override defaults."""
    settings: dict[str, Any] = {
        **transport_client_config(config),
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "compression.type": "lz4",
    }
    settings.update(config.transport.producer)
    return settings


def check_reachable(settings: dict[str, Any], timeout_s: float = 10.0) -> None:
    """Fail fast with the bootstrap servers named, instead of a silent librdkafka retry loop."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**settings, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout_s)
    except Exception as exc:
        raise KafkaUnreachable(
            f"Kafka at {settings.get('bootstrap.servers')!r} did not answer within {timeout_s:.0f} s ({exc})"
        ) from None


def ensure_topic(settings: dict[str, Any], topic: str, partitions: int, timeout_s: float = 10.0) -> None:
    """Create `topic` if it does not exist yet (an existing topic is left as it is)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(settings)
    if topic in admin.list_topics(timeout=timeout_s).topics:
        return
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    try:
        futures[topic].result(timeout_s)
        log.info("created topic %s with %d partitions", topic, partitions)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def use_embedded_broker(config: Config, bootstrap_servers: str) -> None:
    """Point the config at a running embedded tansu and apply its producer workaround."""
    config.cluster.bootstrap_servers = bootstrap_servers
    if not config.transport.bootstrap_servers:
        for key, value in TANSU_PRODUCER_SETTINGS.items():
            config.transport.producer.setdefault(key, value)


@contextlib.contextmanager
def cluster_for(config: Config) -> Iterator[Config]:
    """Yield the config with a cluster to talk to: the configured one, or an embedded tansu."""
    if not config.embedded_broker:
        yield config
        return
    shared = os.environ.get(EMBEDDED_BOOTSTRAP_ENV)
    if shared:
        use_embedded_broker(config, shared)
        yield config
        return
    with EmbeddedBroker() as broker:
        use_embedded_broker(config, broker.bootstrap_servers)
        yield config
