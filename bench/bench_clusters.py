"""One collector over two clusters: 2 × (2,500 groups × 20 partitions) on two real Kafka brokers.

Setup per broker: bench_admin's workload at half size (25 topics × 20 partitions, 50 records in
every partition, 2,500 groups committing on all 20 partitions of one topic). The first broker
runs KAFKA_HOME, the second KAFKA_HOME_COMPAT where set (else KAFKA_HOME again).

Measured the way `lagwatch collect` runs a cycle: the collectors `build_collectors` makes from
the config, scraped concurrently through `CollectLoop.scrapes` (publishing left out, as in
bench_admin; its cost per sample is bench_admin's publish row). First with the first cluster
alone (`[cluster]`), then the second alone, then both (`[[clusters]]`): the collector's CPU
(this process) per partition offset read (committed, log-end, log-start), over CYCLES cycles
after one warm-up cycle (which also reads the commit log's backlog: the setup's 50,000 commits). The bar: two
clusters cost at most 10 % more per offset than one, i.e. one collector serves many clusters at
one cluster's unit cost.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from confluent_kafka.admin import AdminClient

from bench.bench_admin import (
    CYCLES,
    PARTITIONS,
    RECORDS_PER_PARTITION,
    check_total_lag,
    commit_every_group,
    create_topics,
    produce_records,
    progress,
)
from bench.common import Result, cpu_seconds_self
from collectors.base import ScrapeResult
from collectors.coordinator import AllTargets
from collectors.publisher import SamplePublisher
from collectors.runner import CollectLoop, build_collectors
from harness.real_kafka import RealKafkaBroker, kafka_home, second_kafka_home
from lagwatch.config import Config, parse_config
from lagwatch.gc_pause import cyclic_gc_paused

TOPICS = 25
GROUPS = 2_500
#: Two clusters may cost this much more CPU per offset than one (the brief's bar: within 10 %).
MAX_OVERHEAD = 1.10
OFFSETS_PER_CLUSTER = GROUPS * PARTITIONS + 2 * TOPICS * PARTITIONS
OFFSET_METRICS = ("committed_offset", "log_end_offset", "log_start_offset")


def set_up(name: str, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    progress(f"{name}: {TOPICS} topics × {PARTITIONS} partitions, {GROUPS:,} groups on {bootstrap}")
    create_topics(admin, TOPICS)
    produce_records(bootstrap, last_alone=False, topics=TOPICS)
    commit_every_group(admin, GROUPS, TOPICS)


def collect_config(clusters: list[tuple[str, str]]) -> Config:
    """bench_admin's collect settings; one cluster as `[cluster]`, more as `[[clusters]]`."""
    entries = [{"name": name, "bootstrap_servers": servers} for name, servers in clusters]
    sections: dict[str, Any] = {
        "transport": {"samples_topic": "bench-clusters-samples"},
        "collect": {"interval_s": 120, "timeout_s": 120, "coordinate": False},
    }
    sections.update({"cluster": entries[0]} if len(entries) == 1 else {"clusters": entries})
    return parse_config(sections, environ={})


def check(results: list[ScrapeResult], clusters: int) -> int:
    """Every target read everything and each cluster's lag is exact; returns the offsets read."""
    offsets = 0
    for result in results:
        if not result.ok or result.errors:
            raise RuntimeError(f"{result.target}: ok={result.ok} errors={result.errors[:3]}")
        check_total_lag(sum(s.value for s in result.samples if s.metric == "consumer_lag"), GROUPS)
        offsets += sum(s.source == "admin" and s.metric in OFFSET_METRICS for s in result.samples)
    if offsets != clusters * OFFSETS_PER_CLUSTER:
        raise RuntimeError(f"a cycle read {offsets:,} offsets, expected {clusters * OFFSETS_PER_CLUSTER:,}")
    return offsets


def measure(clusters: list[tuple[str, str]]) -> tuple[float, float, str]:
    """(CPU µs per offset, median cycle s, note) over CYCLES cycles of one collect loop."""
    config = collect_config(clusters)
    collectors = build_collectors(config)
    names = [c.name for c in collectors]
    loop = CollectLoop(config, collectors, SamplePublisher(config), AllTargets(names), "bench")
    cpu, durations = 0.0, []
    try:
        warm_up = list(loop.scrapes([loop.collectors[n] for n in names], int(time.time() * 1000)))
        check([result for _, result, _ in warm_up], len(clusters))
        del warm_up
        for cycle in range(CYCLES):
            with cyclic_gc_paused():  # as the collect loop runs a cycle
                owned = [loop.collectors[n] for n in names]
                cpu_started, started = cpu_seconds_self(), time.monotonic()
                results = [result for _, result, _ in loop.scrapes(owned, int(time.time() * 1000))]
                durations.append(time.monotonic() - started)
                cpu += cpu_seconds_self() - cpu_started
                offsets = check(results, len(clusters))
                del results
            progress(f"{len(clusters)} cluster(s) cycle {cycle + 1}: {durations[-1]:.2f} s, {offsets:,} offsets")
    finally:
        loop.close()
        loop.publisher.close(5)
    per_offset_us = cpu / CYCLES / offsets * 1e6
    note = (
        f"{cpu / CYCLES:.2f} s CPU per cycle of {offsets:,} offsets ({', '.join(names)}); "
        f"cycle median {statistics.median(durations):.2f} s (min {min(durations):.2f}, max {max(durations):.2f})"
    )
    return per_offset_us, statistics.median(durations), note


def run() -> list[Result]:
    load = os.getloadavg()[0]
    with RealKafkaBroker(home=kafka_home()) as first, RealKafkaBroker(home=second_kafka_home()) as second:
        clusters = [(f"kafka-{first.version_text}", first.bootstrap_servers),
                    (f"kafka-{second.version_text}-b", second.bootstrap_servers)]  # fmt: skip
        for name, servers in clusters:
            set_up(name, servers)
        alone = [measure([cluster]) for cluster in clusters]
        two_us, two_s, two_note = measure(clusters)
    # The two brokers may run different Kafka lines: the one-cluster figure is the mean of each alone.
    one_us = statistics.mean(us for us, _, _ in alone)
    alone_note = "; ".join(
        f"{name} alone: {us:.2f} µs ({note})" for (name, _), (us, _, note) in zip(clusters, alone, strict=True)
    )
    context = f"load average {load:.1f} at start on {os.cpu_count()} cores"
    return [
        Result(f"1 cluster × {GROUPS:,} groups × {PARTITIONS} partitions: collector CPU per partition offset",
               one_us, "µs", None, note=f"mean of each cluster alone: {alone_note}; {context}"),
        Result(f"2 clusters × {GROUPS:,} groups × {PARTITIONS} partitions: collector CPU per partition offset",
               two_us, "µs", round(one_us * MAX_OVERHEAD, 3), "max",
               f"{two_us / one_us:.2f}× the one-cluster figure (bar: {MAX_OVERHEAD:.2f}×); {two_note}"),
        Result("2 clusters: cycle time (both clusters read concurrently)", two_s, "s", None,
               note=f"each alone: {', '.join(f'{s:.2f} s' for _, s, _ in alone)}; {RECORDS_PER_PARTITION} "
               f"records per partition"),
    ]  # fmt: skip


if __name__ == "__main__":
    for row in run():
        print(f"{row.name}: {row.figure:,.2f} {row.unit} ({row.verdict}) {row.note}")
