"""The retention margin end to end: real broker settings and retention → real collector cycles →
samples topic → real Spark passes → Parquet lake → the real alert engine → a real webhook.

Five stopped groups, each far behind on its own topic: a young topic with Kafka's default 7-day
retention, a compacted one, one with retention.ms = -1 (no limit), one whose 1 KB segments
expire after 60 s, and one limited by size alone (retention.bytes, retention.ms = -1) that keeps
being produced to. Collector cycle, Spark pass and alert evaluation alternate as in production
until the broker has deleted both short-lived topics' records under their groups' commits. Only
those two groups are ever alerted on: RetentionMarginLow fires while the broker still has their
records, its summary naming the nearer limit (time, size), and their status is LOSS after the
records are gone. The others' margins are the week less the records' age, or NULL with the
reason saying why.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from alerts.engine import AlertEngine
from alerts.leader import AlwaysLeader
from collectors.admin.collector import AdminCollector
from collectors.coordinator import AllTargets
from collectors.publisher import SamplePublisher
from collectors.runner import CollectLoop
from harness.kafka_workload import KafkaWorkload
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config
from lagwatch.kafka import ensure_topic, transport_client_config
from spark_jobs import job
from tests.collectors.admin.test_admin import earliest_offset
from tests.spark_jobs.lake_workload import lake_rows

INTERVAL_S = 3.0
SHORT_RETENTION_MS = 60_000
BATCHES, BATCH = 6, 30  # one segment per flushed batch (1 KB segments, ≈ 530 B per batch)
#: The size-limited topic keeps ≈ 7 such segments: 6 batches fit, the commit after the first one
#: is deleted about 4 batches (cycles) later, and its size margin is under the rule's threshold first.
SIZE_LIMIT = 4000
COMMITTED = 30
WEEK_S = 7 * 86_400.0
#: RetentionMarginLow with a threshold below the short topic's retention and no `for`: the
#: shipped 3600 s / 2m cannot fire ahead of a 60 s retention.
RULE = {
    "name": "RetentionMarginLow",
    "metric": "retention_margin_s",
    "by": ["group_id", "topic", "partition"],
    "op": "<",
    "threshold": 45,
    "severity": "critical",
    "summary": "Retention reaches {group_id}'s committed offset on {topic}/{partition} in {value:.0f} s ({reason})",
}


def _produce_keyed(bootstrap: str, topic: str, count: int) -> None:
    """A compacted topic refuses records without a key."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=b"v", partition=0)
    assert producer.flush(30) == 0


def _summaries(webhook_receiver: Any) -> list[str]:
    return [alert["annotations"]["summary"] for alert in webhook_receiver.alerts()]


def _summary_of(webhook_receiver: Any, topic: str) -> str:
    return next(summary for summary in _summaries(webhook_receiver) if f" on {topic}/0 in " in summary)


def _firing(webhook_receiver: Any) -> set[str]:
    return {alert["labels"]["group_id"] for alert in webhook_receiver.alerts(alertname="RetentionMarginLow")}


@pytest.mark.slow
def test_only_the_group_retention_will_really_reach_is_alerted_before_its_records_go(
    spark: Any,
    kafka: KafkaWorkload,
    broker: RealKafkaBroker,
    make_config: Callable[..., Config],
    unique: Callable[[str], str],
    webhook_receiver: Any,
):
    prefix = unique("margin")
    names = ("young", "compacted", "forever", "short", "sized")
    topic = {name: f"{prefix}-{name}-topic" for name in names}
    group = {name: f"{prefix}-{name}" for name in names}
    settings = {
        "young": {},  # the broker's default: 7 days, delete
        "compacted": {"cleanup.policy": "compact"},
        "forever": {"retention.ms": "-1", "retention.bytes": "-1"},
        "short": {broker.segment_bytes_config: "1024", "retention.ms": str(SHORT_RETENTION_MS)},
        "sized": {broker.segment_bytes_config: "1024", "retention.ms": "-1", "retention.bytes": str(SIZE_LIMIT)},
    }
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic[n], 1, 1, config=settings[n]) for n in names]).values():
        future.result(10)
    config = make_config(
        collect={"interval_s": INTERVAL_S, "timeout_s": 2, "describe_groups": False, "groups_allow": [f"^{prefix}-"]},
        alerts={"rules": [RULE], "receivers": [{"name": "ops", "url": webhook_receiver.url}], "group_wait": "0s",
                "leadership": "none"},
    )  # fmt: skip
    ensure_topic(transport_client_config(config), config.transport.samples_topic, config.transport.samples_partitions)
    for name in ("young", "forever", "short", "sized"):
        for _ in range(BATCHES):
            kafka.produce(topic[name], {0: BATCH})
    _produce_keyed(broker.bootstrap_servers, topic["compacted"], BATCHES * BATCH)
    for name in names:
        kafka.commit(group[name], topic[name], {0: COMMITTED})

    publisher = SamplePublisher(config)
    loop = CollectLoop(config, [AdminCollector(config)], publisher, AllTargets([f"admin@{config.cluster.name}"]), "t")
    engine = AlertEngine(config, leadership=AlwaysLeader("test"))
    expiring = ("short", "sized")
    alerted_while_kept: dict[str, bool] = {}  # at the first alert on each expiring group
    sized_margins: list[tuple[str | None, float | None, str]] = []  # its newest lag_1m row after each pass
    deadline = time.monotonic() + 4 * SHORT_RETENTION_MS / 1000
    try:
        while time.monotonic() < deadline:
            kafka.produce(topic["sized"], {0: BATCH})  # a produce rate, and the size limit deleting
            assert loop.cycle().failed == []
            assert publisher.flush() == 0
            # before the Spark pass: no later
            kept = {name: earliest_offset(admin, topic[name], 0) <= COMMITTED for name in expiring}
            assert job.run(config, argparse.Namespace(available_now=True)) == 0
            engine.step(now=time.time())
            for name in expiring:
                if group[name] in _firing(webhook_receiver):
                    alerted_while_kept.setdefault(name, kept[name])
            sized_margins += lake_rows(
                config,
                "select retention_limit, retention_margin_s, retention_reason from lag_1m where group_id = ? "
                "order by window_start desc limit 1",
                [group["sized"]],
            )
            losses = lake_rows(
                config, "select group_id from group_status where status = 'LOSS' and group_id in (?, ?)",
                [group["short"], group["sized"]],
            )  # fmt: skip
            if {g for (g,) in losses} == {group["short"], group["sized"]}:
                break
            time.sleep(INTERVAL_S)
    finally:
        engine.close()
        loop.close()
        assert publisher.close() == 0

    assert alerted_while_kept == {"short": True, "sized": True}, "fired while the records were kept"
    assert {g for (g,) in losses} == {group["short"], group["sized"]}, "the broker deleted the records: LOSS"
    assert _firing(webhook_receiver) == {group["short"], group["sized"]}, "none for the young, compacted, unlimited"
    assert "(time limit nearer: retention.ms 60000 (1m); the committed record is" in _summary_of(
        webhook_receiver, topic["short"]
    )
    assert f"(size limit nearer: retention.bytes {SIZE_LIMIT} per partition, " in _summary_of(
        webhook_receiver, topic["sized"]
    )
    size_margins = [(margin, reason) for limit, margin, reason in sized_margins if limit == "size"]
    assert any(0 < margin < SHORT_RETENTION_MS for margin, _ in size_margins), sized_margins
    assert all(
        reason.startswith(f"size limit nearer: retention.bytes {SIZE_LIMIT} per partition")
        for _, reason in size_margins
    ), sized_margins

    rows = lake_rows(
        config,
        "select group_id, arg_max(retention_margin_s, window_start), arg_max(retention_limit, window_start), "
        "arg_max(retention_reason, window_start), min(retention_margin_s) from lag_1m "
        "where group_id like ? group by group_id",
        [f"{prefix}-%"],
    )
    newest = {g: rest for g, *rest in rows}
    margin_s, limit, reason, least = newest[group["young"]]
    assert limit == "time" and WEEK_S - 300 < least <= margin_s < WEEK_S, "a week less the records' age"
    assert reason.startswith("time limit nearer: retention.ms 604800000 (168h00m)")
    assert newest[group["compacted"]][:3] == [
        None,
        None,
        "no margin: cleanup.policy=compact, retention never deletes on this topic",
    ]
    assert newest[group["forever"]][:2] == [None, None]
    assert newest[group["forever"]][2].startswith("no margin: retention.ms = -1 and retention.bytes = -1")
    for name in expiring:
        assert newest[group[name]][0] == 0.0 and newest[group[name]][2].startswith("passed: retention deleted")
