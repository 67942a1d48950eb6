"""Publish samples to the samples topic without losing or silently dropping any.

Why it looks like this:
- Idempotent producer with acks=all: a retried produce cannot create a duplicate record, and
  the deterministic sample id lets the Spark job drop any duplicate that still slips through.
- The producer's queue is the bounded buffer (`collect.buffer_samples`). When it is full we
  wait for deliveries (backpressure) instead of dropping: a slow collector beats a lossy one.
- Every sample is counted as produced, delivered or failed; the heartbeat publishes those
  counts, so a gap is visible downstream instead of being a log line nobody reads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaError, Producer

from lagwatch.config import Config
from lagwatch.kafka import producer_config
from lagwatch.samples import Sample

log = logging.getLogger(__name__)

#: librdkafka errors that mean "the transport broker cannot be reached right now".
_UNREACHABLE_CODES = {KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE}


@dataclass
class DeliveryCounts:
    produced: int = 0
    delivered: int = 0
    failed: int = 0

    @property
    def in_flight(self) -> int:
        return self.produced - self.delivered - self.failed


class SamplePublisher:
    """Produces samples keyed by entity (one entity's samples stay ordered) and counts their fate."""

    def __init__(self, config: Config) -> None:
        self.topic = config.transport.samples_topic
        self.counts = DeliveryCounts()
        self._lock = threading.Lock()
        self._unreachable_since: float | None = None
        settings = {
            **producer_config(config),
            "queue.buffering.max.messages": config.collect.buffer_samples,
            "error_cb": self._on_error,
        }
        self._servers = settings["bootstrap.servers"]
        self._producer = Producer(settings)

    def publish(self, samples: Iterable[Sample]) -> int:
        """Queue every sample; blocks (serving deliveries) while the buffer is full."""
        queued = 0
        for sample in samples:
            self._produce(sample)
            queued += 1
        self._producer.poll(0)
        return queued

    def _produce(self, sample: Sample) -> None:
        value, key = sample.to_json(), sample.key()
        while True:
            try:
                self._producer.produce(self.topic, value=value, key=key, on_delivery=self._on_delivery)
                break
            except BufferError:
                self._producer.poll(0.1)  # buffer full: wait for deliveries, never drop
        with self._lock:
            self.counts.produced += 1

    def _on_delivery(self, err: KafkaError | None, _msg: object) -> None:
        with self._lock:
            if err is None:
                self.counts.delivered += 1
            else:
                self.counts.failed += 1
        if err is not None:
            log.error("sample not delivered to %s: %s", self.topic, err)
        elif self._unreachable_since is not None:
            log.info(
                "transport broker %s reachable again after %.0f s",
                self._servers,
                time.monotonic() - self._unreachable_since,
            )
            self._unreachable_since = None

    def _on_error(self, err: KafkaError) -> None:
        if err.code() in _UNREACHABLE_CODES:
            if self._unreachable_since is None:
                self._unreachable_since = time.monotonic()
                log.warning(
                    "transport broker %s unreachable (%s); samples are buffered (%d in flight) and retried",
                    self._servers,
                    err.str(),
                    self.counts.in_flight,
                )
        else:
            log.warning("producer error from %s: %s", self._servers, err.str())

    def serve(self, timeout_s: float = 0) -> None:
        """Run delivery callbacks (call regularly between cycles)."""
        self._producer.poll(timeout_s)

    def flush(self, timeout_s: float = 30) -> int:
        """Wait for every queued sample; returns how many are still undelivered."""
        remaining = self._producer.flush(timeout_s)
        if remaining:
            log.error("%d samples still undelivered to %s after %.0f s", remaining, self._servers, timeout_s)
        return int(remaining)

    def close(self, timeout_s: float = 30) -> int:
        remaining = self.flush(timeout_s)
        counts = self.counts
        log.info(
            "publisher closed: produced %d, delivered %d, failed %d, undelivered %d",
            counts.produced,
            counts.delivered,
            counts.failed,
            remaining,
        )
        return remaining
