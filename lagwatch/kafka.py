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
from lagwatch.config import ClusterConfig, Config, ConfigError

log = logging.getLogger(__name__)

#: Set by `lagwatch up` for its children: the bootstrap servers of the embedded tansu it runs.
EMBEDDED_BOOTSTRAP_ENV = "LAGWATCH_EMBEDDED_BOOTSTRAP"


class KafkaUnreachable(RuntimeError):
    """The named bootstrap servers did not answer."""


def cluster_client_config(config: Config, cluster: ClusterConfig | None = None) -> dict[str, Any]:
    """Settings for clients of one monitored cluster (admin collector, demo): `cluster`, else the
    home cluster (`config.cluster`, the first one, which also runs the demo and carries the
    samples when `[transport]` is empty). Each cluster has its own servers and client settings
    (secrets from LAGWATCH_CLUSTER_<NAME>_*, merged in by the config loader)."""
    chosen = cluster or config.cluster
    return {"bootstrap.servers": chosen.bootstrap_servers, **chosen.client}


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


def check_reachable(settings: dict[str, Any], timeout_s: float = 10.0, *, cluster: str | None = None) -> None:
    """Fail fast with the bootstrap servers (and the cluster, when given) named, instead of a
    silent librdkafka retry loop."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**settings, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout_s)
    except Exception as exc:
        who = f"cluster {cluster!r}: " if cluster else ""
        raise KafkaUnreachable(
            f"{who}Kafka at {settings.get('bootstrap.servers')!r} did not answer within {timeout_s:.0f} s ({exc})"
        ) from None


#: Replication factor of created topics when none is configured: 3, or every live broker if fewer.
DEFAULT_MAX_REPLICATION = 3
#: Where the replication factor of Lagwatch's own topics is configured (named in errors).
REPLICATION_KEY = "transport.replication_factor"


def ensure_topic(
    settings: dict[str, Any],
    topic: str,
    partitions: int,
    timeout_s: float = 10.0,
    *,
    replication_factor: int | None = None,
    topic_config: dict[str, str] | None = None,
) -> None:
    """Create `topic` if it does not exist yet (an existing topic is left as it is).

    The replication factor is `replication_factor`, else min(3, live brokers): a hard-coded 1
    loses the samples with any one broker, and more than the live brokers cannot be created.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(settings)
    metadata = admin.list_topics(timeout=timeout_s)
    if topic in metadata.topics:
        return
    brokers = len(metadata.brokers)
    replication = replication_factor or min(DEFAULT_MAX_REPLICATION, max(1, brokers))
    if replication > brokers:
        raise ConfigError(
            f"{REPLICATION_KEY} = {replication}, but Kafka at {settings.get('bootstrap.servers')!r} has "
            f"{brokers} live broker(s): topic {topic!r} cannot be created. Lower it, or leave it unset "
            f"for min({DEFAULT_MAX_REPLICATION}, live brokers)."
        )
    new = NewTopic(topic, num_partitions=partitions, replication_factor=replication, config=topic_config or {})
    try:
        admin.create_topics([new])[topic].result(timeout_s)
        log.info("created topic %s: %d partitions, replication %d, %s", topic, partitions, replication, topic_config)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def _retention(hours: float) -> dict[str, str]:
    return {"retention.ms": str(int(hours * 3_600_000))}


def ensure_samples_topic(config: Config) -> None:
    """The samples topic on the transport cluster, with the configured replication and retention."""
    transport = config.transport
    ensure_topic(
        transport_client_config(config),
        transport.samples_topic,
        transport.samples_partitions,
        replication_factor=transport.replication_factor,
        topic_config=_retention(transport.samples_retention_hours),
    )


def ensure_internal_topic(config: Config, topic: str, partitions: int) -> None:
    """A coordination or leader topic on the transport cluster (group protocol only, no data)."""
    ensure_topic(
        transport_client_config(config),
        topic,
        partitions,
        replication_factor=config.transport.replication_factor,
        topic_config=_retention(config.transport.internal_retention_hours),
    )


def use_embedded_broker(config: Config, bootstrap_servers: str) -> None:
    """Point the config at a running embedded tansu and apply its producer workaround.

    Only the one-cluster form gets here: `[[clusters]]` entries must name their servers, so the
    embedded demo broker is never one of many clusters."""
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
