"""Topic ids → names for the commit-log reader: KIP-848 assignment records name topics by id.

Asked of the cluster (DescribeTopics) only when the reader met an id it cannot name: first
for the topics it has no id for yet, then, if an id is still unnamed (a topic recreated under
its old name gets a new id), for every topic, at most once per :data:`REDESCRIBE_S`.
"""

from __future__ import annotations

import logging
import struct
import time
from typing import Any

from confluent_kafka import TopicCollection

log = logging.getLogger(__name__)

REDESCRIBE_S = 60.0


def topic_id_bytes(uuid: Any) -> bytes:
    """A confluent-kafka Uuid as the 16 bytes Kafka writes in its records."""
    return struct.pack(">qq", uuid.get_most_significant_bits(), uuid.get_least_significant_bits())


class TopicIdNamer:
    def __init__(self) -> None:
        self._named: set[str] = set()
        self._all_described_at = float("-inf")

    def name_unknown(self, admin: Any, reader: Any, topics: list[str], timeout_s: float) -> None:
        """Teach `reader` (learn_topic_ids, unknown_topic_ids) the ids of `topics` it lacks."""
        if not reader.unknown_topic_ids():
            return
        wanted = [t for t in topics if t not in self._named]
        if not wanted and time.monotonic() - self._all_described_at >= REDESCRIBE_S:
            wanted, self._all_described_at = topics, time.monotonic()
        if not wanted:
            return
        names: dict[bytes, str] = {}
        try:
            futures = admin.describe_topics(TopicCollection(wanted), request_timeout=max(1.0, timeout_s))
            for topic, future in futures.items():
                try:
                    names[topic_id_bytes(future.result().topic_id)] = topic
                except Exception as exc:  # a topic deleted meanwhile: the others still count
                    log.debug("describe topic %s: %s", topic, exc)
        except Exception as exc:  # KafkaException, or a local error
            log.info("commit log: topic ids not named this cycle: %s", exc)
            return
        self._named.update(names.values())
        reader.learn_topic_ids(names)
