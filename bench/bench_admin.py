"""Admin collector at scale: 5,000 groups × 20 partitions, on a real Kafka broker and on tansu.

Setup per broker (printed as it goes): 50 topics × 20 partitions; 50 records in every
partition; 5,000 groups, each committing an offset on all 20 partitions of one topic
(100,000 committed offsets) through alter_consumer_group_offsets, many requests in flight.
On the real broker the records are produced in ordinary batches. On tansu the last record of
each partition goes in a batch of its own, because tansu reports a wrong high watermark after
a multi-record batch; that workaround is tansu's alone.

Measured per broker: the collector's CPU (this process: Python and librdkafka's threads) per
partition offset read (committed + log-end + log-start offsets of one cycle), the cycle's wall
time, the broker process's CPU over the same cycles (/proc/<pid>/stat), and peak RSS of both.
The committed offsets come from the commit log where the broker has one (the default); with
`commit_log = off` the OffsetFetch path is measured both ways, with the groups' describe going
the same way: many groups per request (the protocol client) and requests per group (librdkafka,
its fallback).
Separately, the CPU of publishing one cycle's samples (JSON, key, produce) with the product's
publisher, to a samples topic on the same broker.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import Result, cpu_seconds_self, peak_rss_mb_self
from collectors.admin import protocol_choice
from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory, ScrapeResult
from collectors.publisher import SamplePublisher
from harness.real_kafka import RealKafkaBroker, kafka_home
from lagwatch.config import Config, parse_config
from lagwatch.gc_pause import cyclic_gc_paused
from lagwatch.samples import Sample
from shell.broker import EmbeddedBroker

TOPICS = 50
PARTITIONS = 20
GROUPS = 5_000
RECORDS_PER_PARTITION = 50
CYCLES = 3
SETUP_IN_FLIGHT = 256
CYCLE_BAR_S = 3.0
CPU_PER_OFFSET_BAR_US = 10.0
SAMPLES_TOPIC = "bench-admin-samples"


def progress(message: str) -> None:
    print(f"bench_admin: {message}", file=sys.stderr, flush=True)


def topic_name(index: int) -> str:
    return f"bench-admin-{index:03d}"


def create_topics(admin: AdminClient, topics: int = TOPICS) -> None:
    futures = admin.create_topics([NewTopic(topic_name(i), PARTITIONS, 1) for i in range(topics)])
    for future in futures.values():
        future.result(30)


def produce_records(bootstrap: str, last_alone: bool, topics: int = TOPICS) -> None:
    """Batched records; with `last_alone` (tansu) the last record of each partition in a batch of its own."""
    batched = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for index in range(topics):
        for partition in range(PARTITIONS):
            for _ in range(RECORDS_PER_PARTITION - (1 if last_alone else 0)):
                batched.produce(topic_name(index), b"x" * 32, partition=partition)
            batched.poll(0)
    if batched.flush(60):
        raise RuntimeError("batched records not delivered")
    if not last_alone:
        return
    single = Producer({"bootstrap.servers": bootstrap, "batch.num.messages": 1, "linger.ms": 0, "acks": "all"})
    for index in range(TOPICS):
        for partition in range(PARTITIONS):
            single.produce(topic_name(index), b"last", partition=partition)
        single.poll(0)
    if single.flush(60):
        raise RuntimeError("single-record batches not delivered")


def group_name(group: int) -> str:
    return f"bench-group-{group:05d}"


def group_offsets(group: int, topics: int = TOPICS) -> list[TopicPartition]:
    """Group g commits on all partitions of topic g % topics, at offsets giving lags 0..49."""
    return [
        TopicPartition(topic_name(group % topics), p, (group + p) % RECORDS_PER_PARTITION + 1)
        for p in range(PARTITIONS)
    ]


def commit_groups(admin: AdminClient, groups: list[int], topics: int = TOPICS) -> None:
    """alter_consumer_group_offsets for `groups`, SETUP_IN_FLIGHT requests at a time."""
    in_flight: list[Future[Any]] = []
    started = time.monotonic()
    for done_count, group in enumerate(groups, 1):
        request = [ConsumerGroupTopicPartitions(group_name(group), group_offsets(group, topics))]
        in_flight.append(admin.alter_consumer_group_offsets(request)[group_name(group)])
        if len(in_flight) >= SETUP_IN_FLIGHT:
            done, pending = wait(in_flight, return_when="FIRST_COMPLETED")
            for future in done:
                future.result()
            in_flight = list(pending)
        if done_count % 1000 == 0:
            progress(f"committed {done_count:,} of {len(groups):,} groups ({time.monotonic() - started:.1f} s)")
    for future in in_flight:
        future.result(30)


def listed_groups(admin: AdminClient) -> set[str]:
    return {listing.group_id for listing in admin.list_consumer_groups(request_timeout=60).result(90).valid or []}


def commit_every_group(admin: AdminClient, groups: int = GROUPS, topics: int = TOPICS) -> None:
    """Every group's committed offsets (100,000 by default), checked by reading the group list back.

    The first commit creates __consumer_offsets. A real broker that is still loading those
    partitions may acknowledge a commit and then lose it (docs/admin-collector.md), so
    one group goes first, and groups missing from the list afterwards are committed again.
    """
    for _attempt in range(20):
        commit_groups(admin, [0], topics)
        time.sleep(0.5)
        if group_name(0) in listed_groups(admin):
            break
    missing = list(range(groups))
    for _attempt in range(3):
        commit_groups(admin, missing, topics)
        listed = listed_groups(admin)
        missing = [g for g in missing if group_name(g) not in listed]
        if not missing:
            return
        progress(f"{len(missing)} groups lost by the broker: committing them again")
    raise RuntimeError(f"{len(missing)} groups still not listed after three commits")


def collector_config(bootstrap: str, describe_groups: bool, commit_log: str = "auto") -> Config:
    """Default collect settings except a timeout long enough to measure a whole slow cycle."""
    collect = {"interval_s": 120, "timeout_s": 120, "describe_groups": describe_groups, "commit_log": commit_log}
    sections = {
        "cluster": {"name": "bench", "bootstrap_servers": bootstrap},
        "transport": {"samples_topic": SAMPLES_TOPIC},
        "collect": collect,
    }
    return parse_config(sections, environ={})


def process_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident set (VmHWM), e.g. the broker's."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Cycles:
    """Wall time of each cycle, offsets and samples in one cycle, CPU seconds per cycle."""

    durations: list[float] = field(default_factory=list)
    offsets: int = 0
    samples: int = 0
    collector_cpu_s: float = 0.0
    broker_cpu_s: float = 0.0
    #: The last cycle's commit_log_in_use sample (None: no commit-log reader, commit_log = off).
    commit_log_in_use: float | None = None

    @property
    def median_s(self) -> float:
        return statistics.median(self.durations)

    @property
    def cpu_per_offset_us(self) -> float:
        return self.collector_cpu_s / self.offsets * 1e6

    def note(self, broker: str) -> str:
        return (
            f"median of {len(self.durations)} (min {min(self.durations):.2f} s, max {max(self.durations):.2f} s); "
            f"CPU per cycle: collector {self.collector_cpu_s:.2f} s, {broker} {self.broker_cpu_s:.2f} s"
        )


def check_total_lag(total: float, groups: int = GROUPS) -> None:
    """The cycle must also be right: every group's lag is end (RECORDS_PER_PARTITION) − its commit."""
    expected = sum(
        RECORDS_PER_PARTITION - ((group + p) % RECORDS_PER_PARTITION + 1)
        for group in range(groups)
        for p in range(PARTITIONS)
    )
    if total != expected:
        raise RuntimeError(f"total consumer_lag {total:,.0f}, expected {expected:,}")


def check_cycle(result: ScrapeResult, cycle: int, cycles: Cycles) -> None:
    """A cycle counts only if it read everything and its lag is exact."""
    if not result.ok or result.errors:
        raise RuntimeError(f"cycle {cycle} failed: ok={result.ok} errors={result.errors[:3]}")
    metrics = Counter(s.metric for s in result.samples)
    check_total_lag(sum(s.value for s in result.samples if s.metric == "consumer_lag"))
    cycles.offsets = metrics["committed_offset"] + metrics["log_end_offset"] + metrics["log_start_offset"]
    cycles.samples = len(result.samples)
    cycles.commit_log_in_use = next((s.value for s in result.samples if s.metric == "commit_log_in_use"), None)


def measure_cycles(
    bootstrap: str,
    broker_pid: int,
    describe_groups: bool,
    count: int,
    keep: list[Sample] | None = None,
    commit_log: str = "auto",
) -> Cycles:
    """`count` collect() cycles; the last cycle's samples are appended to `keep`."""
    collector = AdminCollector(collector_config(bootstrap, describe_groups, commit_log))
    make = SampleFactory(cluster="bench", collector="bench")
    cycles = Cycles()
    broker_started = process_cpu_s(broker_pid)
    try:
        for cycle in range(count):
            with cyclic_gc_paused():  # as the collect loop runs a cycle
                cpu_started, started = cpu_seconds_self(), time.monotonic()
                result = collector.collect(int(time.time() * 1000), make)
                cycles.durations.append(time.monotonic() - started)
                cycles.collector_cpu_s += (cpu_seconds_self() - cpu_started) / count
                check_cycle(result, cycle, cycles)
                if keep is not None and cycle == count - 1:
                    keep.extend(result.samples)
                del result  # freed before the cycle collector resumes, as in the collect loop
            progress(
                f"describe_groups={describe_groups} commit_log={commit_log} "
                f"protocol_client={protocol_choice.PROTOCOL_CLIENT} cycle {cycle + 1}: "
                f"{cycles.durations[-1]:.2f} s, {cycles.offsets:,} offsets, {cycles.samples:,} samples, "
                f"commit_log_in_use {cycles.commit_log_in_use}"
            )
    finally:
        collector.close()
    cycles.broker_cpu_s = (process_cpu_s(broker_pid) - broker_started) / count
    expected = GROUPS * PARTITIONS + 2 * TOPICS * PARTITIONS
    if cycles.offsets != expected:
        raise RuntimeError(f"a cycle read {cycles.offsets:,} offsets, expected {expected:,}")
    return cycles


def publish_cpu_s(bootstrap: str, samples: list[Sample]) -> float:
    """CPU of publishing one cycle's samples (encode, key, produce, deliver) with the product's publisher.

    Ordinary batching on both brokers: the samples topic is not what the bench reads back.
    """
    publisher = SamplePublisher(collector_config(bootstrap, describe_groups=True))
    started = cpu_seconds_self()
    publisher.publish(samples)
    if publisher.close(120):
        raise RuntimeError("samples not delivered to the samples topic")
    return cpu_seconds_self() - started


def bench_broker(name: str, bootstrap: str, pid: int, last_alone: bool) -> list[Result]:
    """Set up the 5,000 groups on one broker, then measure its cycles and one cycle's publish."""
    load = os.getloadavg()[0]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    progress(f"{name}: creating {TOPICS} topics × {PARTITIONS} partitions on {bootstrap}")
    create_topics(admin)
    progress(f"{name}: producing records")
    produce_records(bootstrap, last_alone)
    progress(f"{name}: committing offsets for {GROUPS:,} groups × {PARTITIONS} partitions")
    commit_every_group(admin)
    samples: list[Sample] = []
    default = measure_cycles(bootstrap, pid, describe_groups=True, count=CYCLES, keep=samples)
    undescribed = measure_cycles(bootstrap, pid, describe_groups=False, count=2)
    batched = measure_cycles(bootstrap, pid, describe_groups=True, count=CYCLES, commit_log="off")
    protocol_choice.PROTOCOL_CLIENT = False
    try:
        per_group = measure_cycles(bootstrap, pid, describe_groups=True, count=CYCLES, commit_log="off")
    finally:
        protocol_choice.PROTOCOL_CLIENT = True
    progress(f"{name}: publishing one cycle's {len(samples):,} samples")
    publish_s = publish_cpu_s(bootstrap, samples)
    context = f"load average {load:.1f} at start on {os.cpu_count()} cores"
    return [
        Result(f"{name}: collector CPU per partition offset", default.cpu_per_offset_us, "µs",
               CPU_PER_OFFSET_BAR_US, "max",
               f"{default.collector_cpu_s:.2f} s CPU per cycle of {default.offsets:,} offsets (committed, "
               f"log-end, log-start), {default.samples:,} samples built; {context}"),
        Result(f"{name}: collector CPU per partition offset, OffsetFetch and describe in batches of groups",
               batched.cpu_per_offset_us, "µs", CPU_PER_OFFSET_BAR_US, "max",
               f"commit_log = off, Lagwatch's protocol client; {batched.collector_cpu_s:.2f} s CPU per cycle, "
               f"{batched.note(name)}"),
        Result(f"{name}: collector CPU per partition offset, OffsetFetch and describe per group (librdkafka)",
               per_group.cpu_per_offset_us, "µs", None,
               note=f"commit_log = off, the fallback path; {per_group.collector_cpu_s:.2f} s CPU per cycle, "
               f"{per_group.note(name)}"),
        Result(f"{name}: cycle time, 5,000 groups × 20 partitions", default.median_s, "s", CYCLE_BAR_S, "max",
               default.note(name)),
        Result(f"{name}: broker CPU per cycle", default.broker_cpu_s, "s", None,
               note=f"{name} process (pid {pid}) over the same cycles, beside the collector's "
               f"{default.collector_cpu_s:.2f} s"),
        Result(f"{name}: cycle time, describe_groups = false", undescribed.median_s, "s", None,
               note=undescribed.note(name)),
        Result(f"{name}: publish CPU per sample", publish_s / len(samples) * 1e6, "µs", None,
               note=f"{publish_s:.2f} s to publish one cycle's {len(samples):,} samples (JSON, key, produce, deliver)"),
        Result(f"{name}: peak RSS, collector / broker", peak_rss_mb_self(), "MB", None,
               note=f"collector = this process so far (incl. setup clients); broker peak {peak_rss_mb(pid):,.0f} MB"),
    ]  # fmt: skip


def kafka_homes() -> list[Path]:
    """KAFKA_HOME, then KAFKA_HOME_COMPAT (the oldest supported line) where it is set and another Kafka."""
    homes = [kafka_home()]
    compat = os.environ.get("KAFKA_HOME_COMPAT", "")
    if compat and Path(compat).resolve() != homes[0].resolve() and any(Path(compat).glob("libs/kafka_*.jar")):
        homes.append(Path(compat))
    return homes


def run() -> list[Result]:
    rows: list[Result] = []
    for home in kafka_homes():
        with RealKafkaBroker(home=home) as kafka:
            name = f"kafka {kafka.version_text}"
            rows.extend(bench_broker(name, kafka.bootstrap_servers, kafka.pid or 0, last_alone=False))
    with EmbeddedBroker() as tansu:
        rows.extend(bench_broker("tansu", tansu.bootstrap_servers, tansu.pid or 0, last_alone=True))
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row.name}: {row.figure:,.2f} {row.unit} ({row.verdict}) {row.note}")
