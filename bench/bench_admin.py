"""Admin collector at scale: 5,000 groups × 20 partitions against tansu.

Setup (printed as it goes): an embedded tansu; 50 topics × 20 partitions; records in every
partition (batched for speed, then one single-record batch per partition so tansu's reported
end offsets are exact, docs/architecture.md); 5,000 groups, each committing an offset on all 20
partitions of one topic (100,000 committed offsets), committed through
alter_consumer_group_offsets with many requests in flight.

Measured: wall time of whole collect() cycles (metadata, 1,000 end offsets, group list,
100,000 committed offsets, lag, group descriptions, sample building) and partition offsets
read per second (committed + end offsets per cycle / cycle time); peak RSS of this process
(the collector) and tansu's CPU share, so the figure can be read against the 2 shared cores.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import Result, cpu_seconds_self, peak_rss_mb_self
from collectors.admin import AdminCollector
from collectors.base import SampleFactory
from lagwatch.broker import EmbeddedBroker
from lagwatch.config import Config, parse_config

TOPICS = 50
PARTITIONS = 20
GROUPS = 5_000
RECORDS_PER_PARTITION = 50
CYCLES = 3
SETUP_IN_FLIGHT = 256
CYCLE_BAR_S = 5.0
OFFSETS_PER_S_BAR = 100_000


def progress(message: str) -> None:
    print(f"bench_admin: {message}", file=sys.stderr, flush=True)


def topic_name(index: int) -> str:
    return f"bench-admin-{index:03d}"


def create_topics(admin: AdminClient) -> None:
    futures = admin.create_topics([NewTopic(topic_name(i), PARTITIONS, 1) for i in range(TOPICS)])
    for future in futures.values():
        future.result(30)


def produce_records(bootstrap: str) -> None:
    """Batched records first (fast), then one single-record batch per partition (exact ends on tansu)."""
    batched = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for index in range(TOPICS):
        for partition in range(PARTITIONS):
            for _ in range(RECORDS_PER_PARTITION - 1):
                batched.produce(topic_name(index), b"x" * 32, partition=partition)
            batched.poll(0)
    if batched.flush(60):
        raise RuntimeError("batched records not delivered")
    single = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1, "linger.ms": 0, "acks": "all"})
    for index in range(TOPICS):
        for partition in range(PARTITIONS):
            single.produce(topic_name(index), b"last", partition=partition)
        single.poll(0)
    if single.flush(60):
        raise RuntimeError("single-record batches not delivered")


def commit_groups(admin: AdminClient) -> None:
    """100,000 committed offsets: each group commits on all partitions of one topic, lag 0..49."""
    in_flight: list[Future[Any]] = []
    started = time.monotonic()
    for group in range(GROUPS):
        group_id = f"bench-group-{group:05d}"
        offsets = [
            TopicPartition(topic_name(group % TOPICS), p, (group + p) % RECORDS_PER_PARTITION + 1)
            for p in range(PARTITIONS)
        ]
        in_flight.append(
            admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group_id, offsets)])[group_id]
        )
        if len(in_flight) >= SETUP_IN_FLIGHT:
            done, pending = wait(in_flight, return_when="FIRST_COMPLETED")
            for future in done:
                future.result()
            in_flight = list(pending)
        if (group + 1) % 1000 == 0:
            progress(f"committed {group + 1:,} of {GROUPS:,} groups ({time.monotonic() - started:.1f} s)")
    for future in in_flight:
        future.result(30)


def collector_config(bootstrap: str, describe_groups: bool) -> Config:
    """Default collect settings except a timeout long enough to measure a whole slow cycle."""
    collect = {"interval_s": 120, "timeout_s": 120, "describe_groups": describe_groups}
    return parse_config({"cluster": {"name": "bench", "bootstrap_servers": bootstrap}, "collect": collect}, environ={})


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Cycles:
    """Wall time of each cycle, offsets and samples in one cycle, CPU seconds per cycle."""

    durations: list[float] = field(default_factory=list)
    offsets: int = 0
    samples: int = 0
    collector_cpu_s: float = 0.0
    broker_cpu_s: float = 0.0

    @property
    def median_s(self) -> float:
        return statistics.median(self.durations)

    def note(self) -> str:
        return (
            f"median of {len(self.durations)} (min {min(self.durations):.2f} s, max {max(self.durations):.2f} s); "
            f"CPU per cycle: collector {self.collector_cpu_s:.2f} s, tansu {self.broker_cpu_s:.2f} s"
        )


def check_total_lag(total: float) -> None:
    """The cycle must also be right: every group's lag is end (RECORDS_PER_PARTITION) − its commit."""
    expected = sum(
        RECORDS_PER_PARTITION - ((group + p) % RECORDS_PER_PARTITION + 1)
        for group in range(GROUPS)
        for p in range(PARTITIONS)
    )
    if total != expected:
        raise RuntimeError(f"total consumer_lag {total:,.0f}, expected {expected:,}")


def measure_cycles(bootstrap: str, broker_pid: int, describe_groups: bool, count: int) -> Cycles:
    collector = AdminCollector(collector_config(bootstrap, describe_groups))
    make = SampleFactory(cluster="bench", collector="bench")
    cycles = Cycles()
    collector_started, broker_started = cpu_seconds_self(), process_cpu_s(broker_pid)
    try:
        for cycle in range(count):
            started = time.monotonic()
            result = collector.collect(int(time.time() * 1000), make)
            cycles.durations.append(time.monotonic() - started)
            if not result.ok or result.errors:
                raise RuntimeError(f"cycle {cycle} failed: ok={result.ok} errors={result.errors[:3]}")
            metrics = Counter(s.metric for s in result.samples)
            check_total_lag(sum(s.value for s in result.samples if s.metric == "consumer_lag"))
            cycles.offsets = metrics["committed_offset"] + metrics["log_end_offset"]
            cycles.samples = len(result.samples)
            progress(
                f"describe_groups={describe_groups} cycle {cycle + 1}: {cycles.durations[-1]:.2f} s, "
                f"{cycles.offsets:,} offsets, {cycles.samples:,} samples"
            )
    finally:
        collector.close()
    cycles.collector_cpu_s = (cpu_seconds_self() - collector_started) / count
    cycles.broker_cpu_s = (process_cpu_s(broker_pid) - broker_started) / count
    expected = GROUPS * PARTITIONS + TOPICS * PARTITIONS
    if cycles.offsets != expected:
        raise RuntimeError(f"a cycle read {cycles.offsets:,} offsets, expected {expected:,}")
    return cycles


def run() -> list[Result]:
    load = os.getloadavg()[0]
    with EmbeddedBroker() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        progress(f"creating {TOPICS} topics × {PARTITIONS} partitions on {broker.bootstrap_servers}")
        create_topics(admin)
        progress("producing records")
        produce_records(broker.bootstrap_servers)
        progress(f"committing offsets for {GROUPS:,} groups × {PARTITIONS} partitions")
        commit_groups(admin)
        default = measure_cycles(broker.bootstrap_servers, broker.pid or 0, describe_groups=True, count=CYCLES)
        undescribed = measure_cycles(broker.bootstrap_servers, broker.pid or 0, describe_groups=False, count=2)
    context = f"; load average {load:.1f} at start on {os.cpu_count()} cores"
    return [
        Result("cycle time, 5,000 groups × 20 partitions", default.median_s, "s", CYCLE_BAR_S, "max",
               default.note() + context),
        Result("partition offsets read per second", default.offsets / default.median_s, "offsets/s",
               OFFSETS_PER_S_BAR, "min",
               f"{default.offsets:,} offsets (committed + log-end) per cycle, {default.samples:,} samples built"),
        Result("cycle time, describe_groups = false", undescribed.median_s, "s", None, note=undescribed.note()),
        Result("collector peak RSS", peak_rss_mb_self(), "MB", None, note="benchmark process incl. setup clients"),
    ]  # fmt: skip


if __name__ == "__main__":
    for row in run():
        print(f"{row.name}: {row.figure:,.2f} {row.unit} ({row.verdict}) {row.note}")
