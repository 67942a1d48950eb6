"""Produce real sample records (and malformed ones) into a topic of the test broker.

One record per produce batch (`batch.num.messages=1`): tansu reports a wrong high watermark for
multi-record batches (docs/architecture.md), and the source reads up to the reported end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from confluent_kafka import Producer

from lagwatch.samples import Sample, make_sample


def produce_values(
    servers: str,
    topic: str,
    values: Iterable[tuple[bytes | None, bytes | None]],
    partition: int = 0,
    timestamps_ms: Sequence[int] | None = None,
) -> int:
    """Produce (key, value) records one per batch; ``timestamps_ms`` sets their Kafka timestamps."""
    producer = Producer({"bootstrap.servers": servers, "batch.num.messages": 1, "linger.ms": 0, "acks": "all"})
    count = 0
    for key, value in values:
        stamp = {} if timestamps_ms is None else {"timestamp": timestamps_ms[count]}
        producer.produce(topic, value=value, key=key, partition=partition, **stamp)
        count += 1
        if count % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0, "records not delivered"
    return count


def gauge_samples(count: int, start_ms: int, series: int = 5, step_ms: int = 1000) -> list[Sample]:
    """`count` gauge samples spread over `series` brokers, one per series every step_ms."""
    return [
        make_sample(
            ts=start_ms + (i // series) * step_ms,
            cluster="test",
            source="jmx",
            collector="test",
            metric="under_replicated_partitions",
            kind="gauge",
            value=float(i % 7),
            broker=str(i % series),
        )
        for i in range(count)
    ]


def produce_samples(servers: str, topic: str, samples: Iterable[Sample], partition: int = 0) -> int:
    return produce_values(servers, topic, ((s.key(), s.to_json()) for s in samples), partition)
