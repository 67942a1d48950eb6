"""Client factory: every Kafka client Lagwatch makes gets its settings from here.

One place decides bootstrap servers, pass-through security settings (SASL/SSL go straight to
librdkafka) and the tansu workaround, so no part of the product hand-assembles client dicts.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from lagwatch.config import ClusterConfig, Config, ConfigError

log = logging.getLogger(__name__)

#: librdkafka settings for producers to tansu. tansu reports a wrong high watermark for
#: multi-record batches (docs/architecture.md), so producers send one record per batch. Only
#: the embedded path applies them (`use_embedded_broker`, the demo on tansu); producers to a
#: configured cluster batch as usual.
TANSU_PRODUCER_SETTINGS = {"batch.num.messages": "1"}

#: Set by `lagwatch up` for its children: the bootstrap servers of the embedded tansu it runs.
EMBEDDED_BOOTSTRAP_ENV = "LAGWATCH_EMBEDDED_BOOTSTRAP"
#: Set to "0" by `lagwatch up --no-demo` for its children: the embedded tansu runs no demo, so
#: nothing serves the demo's simulated JMX and the collectors leave it out.
EMBEDDED_DEMO_ENV = "LAGWATCH_EMBEDDED_DEMO"
#: The topic Kafka keeps every offset commit in (read by the commit-log source).
COMMIT_LOG_TOPIC = "__consumer_offsets"
#: group.id of the Spark job's Python Kafka source: it joins no group and commits nothing, but a
#: consumer with a group.id still asks for its coordinator (FindCoordinator needs Describe on it).
SPARK_SOURCE_GROUP = "lagwatch-spark-source"


def commit_log_group(cluster: str) -> str:
    """group.id of the commit-log reader of `cluster`: librdkafka requires one of a consumer; it commits nothing."""
    return f"lagwatch-commitlog-{cluster}"


class KafkaUnreachable(RuntimeError):
    """The named bootstrap servers did not answer."""


class KafkaRefused(KafkaUnreachable):
    """The brokers answered but refused this client: bad credentials or an untrusted certificate."""


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


def check_reachable(settings: dict[str, Any], timeout_s: float = 10.0, *, cluster: str = "") -> None:
    """Fail fast, naming the cluster and the cause, instead of a silent librdkafka retry loop.

    A refused login or an untrusted certificate never turns into an answer, so it is reported
    the moment librdkafka reports it (its error callback), not after `timeout_s` as a timeout.
    """
    from confluent_kafka.admin import AdminClient

    refusals: list[Any] = []  # KafkaErrors from librdkafka's error callback
    admin = AdminClient({**settings, "log_level": 0, "error_cb": refusals.append})
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            return
        except Exception as exc:
            admin.poll(0.1)  # hands connection errors to the callback (and paces a quick failure)
            cause = refusal_cause(refusals)
            if cause is not None:
                raise KafkaRefused(f"{_where(settings, cluster)} refused the connection: {cause}") from None
            if time.monotonic() >= deadline:
                raise KafkaUnreachable(
                    f"{_where(settings, cluster)} did not answer within {timeout_s:.0f} s ({exc})"
                ) from None


def _where(settings: dict[str, Any], cluster: str) -> str:
    where = f"Kafka at {settings.get('bootstrap.servers')!r}"
    return f"cluster {cluster!r}: {where}" if cluster else where


_ELAPSED = re.compile(r"\s*\(after \d+ms in state \w+\)$")


def refusal_cause(errors: list[Any]) -> str | None:
    """Why the broker refused this client, in the operator's words; None when nothing refused it."""
    from confluent_kafka import KafkaError

    for error in errors:
        detail = _ELAPSED.sub("", error.str().split(": ", 1)[-1])  # without "sasl_ssl://host:port/id: "
        if error.code() == KafkaError._AUTHENTICATION:
            return f"authentication failed ({detail}); check the SASL mechanism and credentials"
        if error.code() == KafkaError._SSL and "certificate verify failed" in detail:
            return f"the broker's TLS certificate is not trusted ({detail})"
        if error.code() == KafkaError._SSL:
            return f"TLS handshake failed ({detail})"
    return None


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
        if "AUTHORIZATION_FAILED" in str(exc):
            raise KafkaRefused(
                f"Kafka at {settings.get('bootstrap.servers')!r} refused to create topic {topic!r} ({exc}): grant this "
                "principal Create on it, or create it beforehand; `lagwatch check` lists every grant Lagwatch needs "
                "(docs/acls.md)"
            ) from exc
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


def use_embedded_broker(config: Config, bootstrap_servers: str, with_demo: bool = True) -> None:
    """Point the config at a running embedded tansu and apply its producer workaround;
    `with_demo` False: no demo runs there, so its simulated JMX is not scraped.

    Only the one-cluster form gets here: `[[clusters]]` entries must name their servers, so the
    embedded demo broker is never one of many clusters."""
    config.use_embedded_servers(bootstrap_servers, with_demo)
    if not config.transport.bootstrap_servers:
        for key, value in TANSU_PRODUCER_SETTINGS.items():
            config.transport.producer.setdefault(key, value)
