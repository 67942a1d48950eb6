"""Share scrape targets between collector instances through a Kafka consumer group.

The pattern: every instance subscribes to one coordination
topic with the same group.id, and Kafka's group protocol hands each partition to exactly one
live member. Target i (in the sorted list of target names) belongs to whoever holds
partition i. When an instance dies, its session times out and its partitions, hence its
targets, move to the survivors; nothing else (no leader election, no extra store) is needed.

All instances must be configured with the same target list, since the mapping is positional.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions

from lagwatch.config import Config
from lagwatch.kafka import ensure_internal_topic, transport_client_config

log = logging.getLogger(__name__)


class TargetAssignment(Protocol):
    """Which targets this instance scrapes right now."""

    def owned(self) -> list[str]: ...

    def serve(self) -> None:
        """Let the group protocol run (rebalance callbacks); call often."""
        ...

    def close(self) -> None: ...


class AllTargets:
    """No coordination: this instance scrapes every target (single instance, `--once`)."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = sorted(names)

    def owned(self) -> list[str]:
        return list(self._names)

    def serve(self) -> None:
        return

    def close(self) -> None:
        return


def _listed_partitions(admin: AdminClient, topic: str, timeout_s: float = 10.0) -> int:
    """Partitions the metadata lists for `topic`. A topic created a moment ago is listed with
    none until its leaders are elected; growing it then fails ("already has 1 partition(s)")."""
    deadline = time.monotonic() + timeout_s
    while True:
        partitions = len(admin.list_topics(topic, timeout=timeout_s).topics[topic].partitions)
        if partitions or time.monotonic() > deadline:
            return partitions
        time.sleep(0.1)


def _ensure_partitions(config: Config, topic: str, count: int) -> None:
    """The topic needs one partition per target; grow it if targets were added."""
    ensure_internal_topic(config, topic, count)
    admin = AdminClient(transport_client_config(config))
    current = _listed_partitions(admin, topic)
    if current < count:
        admin.create_partitions([NewPartitions(topic, count)])[topic].result(10)
        log.info("coordination topic %s grown from %d to %d partitions", topic, current, count)


class GroupAssignment:
    """Targets owned through partitions of the coordination topic (cooperative-sticky)."""

    def __init__(self, config: Config, names: Sequence[str], instance_id: str) -> None:
        self._names = sorted(names)
        self._held: set[int] = set()
        settings = transport_client_config(config)
        topic = config.collect.coordination_topic
        _ensure_partitions(config, topic, max(1, len(self._names)))
        session_ms = config.collect.session_timeout_ms
        self._consumer = Consumer(
            {
                **settings,
                "group.id": config.collect.coordination_group,
                "client.id": instance_id,
                "session.timeout.ms": session_ms,
                "heartbeat.interval.ms": max(100, session_ms // 10),
                "max.poll.interval.ms": max(60_000, int(config.collect.interval_s * 4000)),
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
            }
        )
        self._consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._held.update(p.partition for p in partitions)
        log.info("now scraping %s", ", ".join(self.owned()) or "nothing")

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._held.difference_update(p.partition for p in partitions)
        log.info("targets moved away; now scraping %s", ", ".join(self.owned()) or "nothing")

    def owned(self) -> list[str]:
        return [name for index, name in enumerate(self._names) if index in self._held]

    def serve(self) -> None:
        self._consumer.poll(0)

    def close(self) -> None:
        self._consumer.close()
