"""Exactly one sending engine per cluster: whoever holds partition 0 of a one-partition topic.

Every engine of a cluster joins the consumer group named like the topic
`lagwatch.alerts.leader.<cluster>` (or `alerts.leader_topic`) and subscribes to it. Kafka's group protocol gives
the single partition to one live member; when it dies its session times out
(`alerts.leader_session_timeout_ms`) and the partition, hence the sending, moves to another.
A revoked or lost assignment stops sending at once. Followers keep evaluating so their `for`
timers are warm when they take over.

No Kafka at start (`leadership = "kafka"`): the engine logs a warning and sends alone, because
an alert engine that goes quiet exactly when the infrastructure is in trouble is worse than a
possible duplicate (receivers can drop duplicates by incident key). It keeps trying Kafka in
the background and joins the election as soon as Kafka answers, so once the outage is over
only the elected engine sends. `kafka_strict` refuses to send without leadership; `none`
always sends (one engine, or `--once`).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Protocol

from lagwatch.config import Config
from lagwatch.kafka import (
    EMBEDDED_BOOTSTRAP_ENV,
    KafkaUnreachable,
    check_reachable,
    ensure_internal_topic,
    transport_client_config,
    use_embedded_broker,
)

log = logging.getLogger(__name__)


class Leadership(Protocol):
    def is_leader(self) -> bool:
        """Serve the group protocol and say whether this engine may send now."""
        ...

    def close(self) -> None: ...


class AlwaysLeader:
    """Single engine: it always sends."""

    def __init__(self, why: str) -> None:
        log.info("alert engine sends without leader election (%s)", why)

    def is_leader(self) -> bool:
        return True

    def close(self) -> None:
        return


class KafkaLeadership:
    """Leader while this consumer holds partition 0 of the leader topic."""

    def __init__(self, config: Config, instance_id: str) -> None:
        from confluent_kafka import Consumer

        settings = transport_client_config(config)
        topic = config.alert_leader_topic
        ensure_internal_topic(config, topic, 1)
        session_ms = config.alerts.leader_session_timeout_ms
        self._leading = False
        self._lock = threading.Lock()
        self._consumer = Consumer(
            {
                **settings,
                "group.id": topic,  # one group per leader topic, hence per cluster
                "client.id": instance_id,
                "session.timeout.ms": session_ms,
                "heartbeat.interval.ms": max(100, session_ms // 10),
                "max.poll.interval.ms": 300_000,
                # Sticky: an engine that joins later does not take partition 0 (and with it the
                # sending) from the leader, so a notification is never sent by two engines.
                "partition.assignment.strategy": "cooperative-sticky",
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        self._consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        log.info("alert engine %s joined leader election on %s", instance_id, topic)

    def _on_assign(self, _consumer: object, partitions: list) -> None:  # type: ignore[type-arg]
        if any(p.partition == 0 for p in partitions):
            self._leading = True
            log.info("this alert engine is now the leader: it sends notifications")

    def _on_revoke(self, _consumer: object, partitions: list) -> None:  # type: ignore[type-arg]
        if any(p.partition == 0 for p in partitions) and self._leading:
            self._leading = False
            log.warning("leadership lost: this alert engine stops sending")

    def is_leader(self) -> bool:
        with self._lock:
            self._consumer.poll(0)
        return self._leading

    def close(self) -> None:
        with self._lock:
            self._leading = False
            self._consumer.close()


class LeaderUntilKafkaAnswers:
    """Sends alone while Kafka is unreachable, and becomes a `KafkaLeadership` once it answers.

    The probe runs on its own thread (a probe waits up to its timeout, and `is_leader` is called
    every few hundred milliseconds by the engine loop). From the moment the election is joined
    this engine sends only while it holds the partition, like every other engine.
    """

    def __init__(self, config: Config, instance_id: str, retry_s: float) -> None:
        self._config = config
        self._instance_id = instance_id
        self._retry_s = retry_s
        self._joined: KafkaLeadership | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._join_when_reachable, name="leader-rejoin", daemon=True)
        self._thread.start()

    def _join_when_reachable(self) -> None:
        settings = transport_client_config(self._config)
        while not self._stop.wait(self._retry_s):
            try:
                check_reachable(settings, timeout_s=min(5.0, self._retry_s))
                joined = KafkaLeadership(self._config, self._instance_id)
            except Exception as exc:  # still unreachable, or gone again between probe and join
                log.debug("Kafka still unreachable for leader election: %s", exc)
                continue
            if self._stop.is_set():
                joined.close()
                return
            log.warning("Kafka answers again: this alert engine stops sending alone and joins the leader election")
            self._joined = joined
            return

    def is_leader(self) -> bool:
        joined = self._joined
        return True if joined is None else joined.is_leader()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)  # a probe in flight closes what it joined itself
        if self._joined is not None:
            self._joined.close()


def leadership_for(config: Config, instance_id: str, once: bool = False) -> Leadership:
    """Pick the leadership mode from `alerts.leadership` (see the module docstring)."""
    mode = config.alerts.leadership
    if once or mode == "none":
        return AlwaysLeader("--once" if once else "leadership = none")
    if config.embedded_broker:
        shared = os.environ.get(EMBEDDED_BOOTSTRAP_ENV)
        if not shared:
            return AlwaysLeader("no Kafka configured: single engine")
        use_embedded_broker(config, shared)
    try:
        check_reachable(transport_client_config(config), timeout_s=5)
    except KafkaUnreachable as exc:
        if mode == "kafka_strict":
            raise
        log.warning("%s; sending alone until Kafka answers, then joining the leader election", exc)
        return LeaderUntilKafkaAnswers(config, instance_id, retry_s=config.alerts.leader_session_timeout_ms / 2000)
    return KafkaLeadership(config, instance_id)
