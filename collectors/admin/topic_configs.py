"""Each collected topic's retention settings, read with DescribeConfigs, as samples.

What decides when the records under a group's committed offset are deleted is the topic's
`cleanup.policy` (only "delete" deletes by time or size), `retention.ms` (a segment goes once
its newest record is older) and `retention.bytes` (per partition, the oldest segments go
beyond it), each either set on the topic or the broker's default: DescribeConfigs answers the
value in force. The lag step turns them into the retention margin (spark_jobs/lag/retention.py).

Why not every cycle: reading every topic's settings costs collector CPU and a sizeable share of
a cycle's wall time on a real broker (bench/RECORDS.md, "Admin collector", topic retention
settings), and the settings rarely change. A topic is read in the first cycle that lists it,
then again every `collect.topic_config_refresh_s`; its samples are published when read, and the
lag step keeps the newest. A topic whose read fails (an ACL without DescribeConfigs on it) is a
per-metric error of the cycle, tried again at the next refresh, not every cycle.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource

from collectors.admin.requests import KeyedReads, read_in_batches, request_timeout
from collectors.base import SampleFactory
from lagwatch.samples import Sample
from lagwatch.vocabulary import (
    CLEANUP_POLICY_CODE,
    CLEANUP_POLICY_METRIC,
    RETENTION_BYTES_METRIC,
    RETENTION_MS_METRIC,
    Source,
)

#: Topics per DescribeConfigs request (each answer carries all ~40 settings of a topic).
DESCRIBE_CONFIGS_BATCH = 100


@dataclass(frozen=True, slots=True)
class TopicRetention:
    """The settings in force for one topic (-1: no limit)."""

    cleanup_policy: int
    retention_ms: int
    retention_bytes: int


def policy_code(policy: str) -> int:
    """topic_cleanup_policy's code for a `cleanup.policy` value ("compact,delete" in any order)."""
    words = ",".join(sorted(word.strip() for word in policy.split(",") if word.strip()))
    try:
        return CLEANUP_POLICY_CODE[words]
    except KeyError:
        raise ValueError(f"cleanup.policy {policy!r} is none of {', '.join(CLEANUP_POLICY_CODE)}") from None


#: The settings a retention margin needs; a broker that leaves one out of its answer (tansu
#: reports none of them) gives its topics no margin, which is said once, not as a cycle error.
RETENTION_KEYS = ("cleanup.policy", "retention.ms", "retention.bytes")
NOT_REPORTED = "not reported by the broker"


def topic_retention(entries: dict[str, Any]) -> TopicRetention:
    """A DescribeConfigs answer (name → ConfigEntry) as the three settings."""
    missing = [key for key in RETENTION_KEYS if key not in entries]
    if missing:
        raise KeyError(f"{', '.join(missing)} {NOT_REPORTED}")
    return TopicRetention(
        cleanup_policy=policy_code(entries["cleanup.policy"].value),
        retention_ms=int(entries["retention.ms"].value),
        retention_bytes=int(entries["retention.bytes"].value),
    )


class TopicConfigReader:
    """Which topics are due for a read, and the read itself (bounded by the cycle's deadline)."""

    def __init__(self, refresh_s: float) -> None:
        self._refresh_s = refresh_s
        #: topic → monotonic time of its last read (answered or failed)
        self._read_at: dict[str, float] = {}
        #: Topics whose newest answer has a size limit that deletes (for collectors/log_dirs/reader.py).
        self._size_limited: set[str] = set()

    def size_limited(self, topics: Iterable[str]) -> list[str]:
        """Those of `topics` whose newest read has `retention.bytes` ≥ 0 under a delete policy."""
        return sorted(self._size_limited.intersection(topics))

    def due(self, topics: Iterable[str], now: float) -> list[str]:
        """Topics never read, or read more than refresh_s ago; forgets topics no longer listed."""
        listed = set(topics)
        for gone in self._read_at.keys() - listed:
            del self._read_at[gone]
        self._size_limited &= listed
        return sorted(t for t in listed if now - self._read_at.get(t, -self._refresh_s) >= self._refresh_s)

    def read(
        self, admin: AdminClient, topics: list[str], limit: int, deadline: float
    ) -> KeyedReads[str, TopicRetention]:
        """DescribeConfigs of `topics`; a topic that answered or failed is not due until the next refresh."""

        def submit(chunk: list[str]) -> list[Future[Any]]:
            resources = [ConfigResource("topic", topic) for topic in chunk]
            return list(admin.describe_configs(resources, request_timeout=request_timeout(deadline)).values())

        reads = read_in_batches(topics, submit, DESCRIBE_CONFIGS_BATCH, limit, deadline)
        settings: KeyedReads[str, TopicRetention] = KeyedReads(
            errors=reads.errors, unfinished_keys=reads.unfinished_keys
        )
        for topic, entries in reads.answers.items():
            try:
                settings.answers[topic] = topic_retention(entries)
            except (KeyError, ValueError) as exc:  # a setting missing, or a policy we do not know
                settings.errors[topic] = f"{type(exc).__name__}: {exc}"
        now = time.monotonic()
        for topic in [*settings.answers, *settings.errors]:
            self._read_at[topic] = now
        for topic, retention in settings.answers.items():
            if retention.retention_bytes >= 0 and retention.cleanup_policy != CLEANUP_POLICY_CODE["compact"]:
                self._size_limited.add(topic)
            else:
                self._size_limited.discard(topic)
        return settings


def retention_samples(settings: dict[str, TopicRetention], ts: int, make: SampleFactory) -> list[Sample]:
    """topic_cleanup_policy, topic_retention_ms and topic_retention_bytes of each topic read."""
    return [
        make(ts=ts, source=Source.ADMIN, metric=metric, kind="gauge", value=value, topic=topic)
        for topic, read in settings.items()
        for metric, value in (
            (CLEANUP_POLICY_METRIC, read.cleanup_policy),
            (RETENTION_MS_METRIC, read.retention_ms),
            (RETENTION_BYTES_METRIC, read.retention_bytes),
        )
    ]
