"""The publisher delivers every sample, keyed per entity, and never drops one silently."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from collectors.publisher import SamplePublisher
from harness.real_kafka import RealKafkaBroker
from harness.samples_topic import read_samples
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic, transport_client_config
from lagwatch.samples import make_sample
from shell.broker import free_port


def _samples(count: int, cluster: str = "test") -> list:
    return [
        make_sample(
            ts=1_700_000_000_000 + i,
            cluster=cluster,
            source="admin",
            collector="c1",
            metric="consumer_lag",
            kind="gauge",
            value=float(i),
            group_id=f"g{i % 3}",
            topic="t",
            partition=i % 4,
        )
        for i in range(count)
    ]


def test_every_sample_is_delivered_once_with_its_entity_key(make_config: Callable[..., Config]) -> None:
    config = make_config()
    ensure_topic(transport_client_config(config), config.transport.samples_topic, 3)
    publisher = SamplePublisher(config)
    sent = _samples(300)
    publisher.publish(sent)
    assert publisher.close() == 0
    assert (publisher.counts.produced, publisher.counts.delivered, publisher.counts.failed) == (300, 300, 0)

    received = read_samples(config.transport_servers(), config.transport.samples_topic, expect_at_least=300)
    assert sorted(r["id"] for r in received) == sorted(s.id for s in sent)
    by_key: dict[str, set[int]] = {}
    for record in received:
        assert record["_key"] == f"test|admin||t|{record['partition']}|{record['group_id']}|"
        by_key.setdefault(record["_key"], set()).add(record["_partition"])
    # One entity's samples stay on one partition, so they stay in order.
    assert all(len(parts) == 1 for parts in by_key.values())


def test_unreachable_transport_is_logged_and_nothing_is_lost(
    make_config: Callable[..., Config], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    port = free_port()
    config = make_config(cluster={"bootstrap_servers": f"127.0.0.1:{port}"})  # nothing listens there yet
    caplog.set_level(logging.WARNING, logger="collectors.publisher")
    publisher = SamplePublisher(config)
    publisher.publish(_samples(50))
    assert publisher.flush(timeout_s=3) == 50  # nothing claimed as delivered
    assert any("unreachable" in r.getMessage() and str(port) in r.getMessage() for r in caplog.records)

    with RealKafkaBroker(work_dir=tmp_path / "kafka", port=port) as late_broker:
        ensure_topic({"bootstrap.servers": late_broker.bootstrap_servers}, config.transport.samples_topic, 2)
        assert publisher.close(timeout_s=60) == 0
        assert publisher.counts.delivered == 50
        received = read_samples(late_broker.bootstrap_servers, config.transport.samples_topic, expect_at_least=50)
        assert len(received) == 50
