"""Commit-log source at scale: 5,000 groups × 20 partitions committing on a real Kafka broker.

Setup (printed as it goes): a real Apache Kafka 3.8 broker (harness/real_kafka.py,
KAFKA_HOME as for the tests); the admin bench's 50 topics × 20 partitions and 5,000 groups, each
committing all 20 partitions of one topic, ``ROUNDS`` times (100,000 group-partitions,
``ROUNDS`` × 100,000 commit records in `__consumer_offsets`).

Measured:
- the reader's CPU per commit: a fresh reader reads the whole commit log (decode, table,
  queue) on its thread, whose CPU clock is read; then the queue is drained and turned into
  samples on this thread. Both CPU times together, divided by the commits read. The
  process's CPU (librdkafka's fetch threads included) per commit is in the note.
- one admin cycle's lag for 100,000 group-partitions from the commit log (no OffsetFetch),
  after a warm-up cycle that loads the log; checked against the expected total lag. One
  OffsetFetch cycle on the same broker is given beside it for comparison.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections import Counter

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from bench.bench_admin import (
    CYCLES,
    GROUPS,
    PARTITIONS,
    TOPICS,
    check_total_lag,
    commit_every_group,
    commit_groups,
    create_topics,
)
from bench.bench_admin import produce_records as produce_admin_records
from bench.common import Result, cpu_seconds_self
from collectors.admin.collector import AdminCollector
from collectors.admin.samples import NameFilter
from collectors.base import SampleFactory
from collectors.commit_log.reader import TOPIC, CommitLogReader, commit_samples
from harness.real_kafka import RealKafkaBroker
from lagwatch.config import Config, parse_config
from lagwatch.vocabulary import Source

ROUNDS = 3
CPU_PER_COMMIT_BAR_US = 10.0
GROUP_PARTITIONS = GROUPS * PARTITIONS


def progress(message: str) -> None:
    print(f"bench_commit_log: {message}", file=sys.stderr, flush=True)


def read_whole_log(bootstrap: str, partitions: int) -> tuple[int, float, float, float]:
    """(commits read, reader-thread CPU s, drain-to-samples CPU s, process CPU s) for one full read."""
    everything = NameFilter([".*"], [])
    reader = CommitLogReader({"bootstrap.servers": bootstrap}, "bench", everything, NameFilter(["^bench-admin-"], []))
    process_started = cpu_seconds_self()
    reader.start(partitions)
    if not reader.wait_loaded(600):
        raise RuntimeError(f"commit log not loaded: {reader.failure or reader.loading_progress}")
    reader_cpu = reader.cpu_seconds()
    started = time.thread_time()
    samples = commit_samples(reader.drain(), SampleFactory(cluster="bench", collector="bench"))
    sample_cpu = time.thread_time() - started
    process_cpu = cpu_seconds_self() - process_started
    reader.close()
    in_log = records_in_log(bootstrap, partitions)
    if len(samples) != in_log or in_log < 0.99 * ROUNDS * GROUP_PARTITIONS:
        raise RuntimeError(f"read {len(samples):,} commits of {in_log:,} in the log ({ROUNDS} rounds committed)")
    return len(samples), reader_cpu, sample_cpu, process_cpu


def records_in_log(bootstrap: str, partitions: int) -> int:
    """Records in `__consumer_offsets`: here all offset commits (a commit the coordinator refused
    while it was still loading, on the fresh broker, is not one)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_offsets({TopicPartition(TOPIC, p): OffsetSpec.latest() for p in range(partitions)})
    return sum(future.result(30).offset for future in futures.values())


def collector_config(bootstrap: str, commit_log: str) -> Config:
    collect = {"interval_s": 120, "timeout_s": 120, "describe_groups": False, "commit_log": commit_log}
    return parse_config({"cluster": {"name": "bench", "bootstrap_servers": bootstrap}, "collect": collect}, environ={})


def lag_cycles(bootstrap: str, commit_log: str, count: int) -> tuple[list[float], float]:
    """Wall time of `count` cycles after a warm-up one, and CPU seconds per cycle."""
    collector = AdminCollector(collector_config(bootstrap, commit_log))
    make = SampleFactory(cluster="bench", collector="bench")
    durations: list[float] = []
    try:
        collector.collect(int(time.time() * 1000), make)  # warm-up: the commit log loads here
        cpu_started = cpu_seconds_self()
        for cycle in range(count):
            started = time.monotonic()
            result = collector.collect(int(time.time() * 1000), make)
            durations.append(time.monotonic() - started)
            if not result.ok or result.errors:
                raise RuntimeError(f"cycle {cycle} failed: ok={result.ok} errors={result.errors[:3]}")
            metrics = Counter(s.metric for s in result.samples if s.source == Source.ADMIN)
            if metrics["committed_offset"] != GROUP_PARTITIONS:
                raise RuntimeError(f"{metrics['committed_offset']:,} committed offsets, expected {GROUP_PARTITIONS:,}")
            check_total_lag(sum(s.value for s in result.samples if s.metric == "consumer_lag"))
            in_use = [s.value for s in result.samples if s.metric == "commit_log_in_use"]
            progress(f"commit_log={commit_log} cycle {cycle + 1}: {durations[-1]:.2f} s (commit_log_in_use {in_use})")
            if commit_log == "on" and in_use != [1.0]:
                raise RuntimeError("the cycle did not use the commit log")
        cpu_per_cycle = (cpu_seconds_self() - cpu_started) / count
    finally:
        collector.close()
    return durations, cpu_per_cycle


def run() -> list[Result]:
    load = os.getloadavg()[0]
    with RealKafkaBroker(tempfile.mkdtemp(prefix="bench-commit-log-")) as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        progress(f"creating {TOPICS} topics × {PARTITIONS} partitions on {bootstrap}")
        create_topics(admin)
        produce_admin_records(bootstrap, last_alone=False)
        for round_number in range(ROUNDS):
            progress(f"round {round_number + 1} of {ROUNDS}: {GROUPS:,} groups commit {PARTITIONS} partitions each")
            if round_number == 0:  # the first commits create __consumer_offsets: checked and redone if lost
                commit_every_group(admin)
            else:
                commit_groups(admin, list(range(GROUPS)))
        partitions = len(admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions)
        commits, reader_cpu, sample_cpu, process_cpu = read_whole_log(bootstrap, partitions)
        progress(f"read {commits:,} commits: reader {reader_cpu:.2f} s CPU, samples {sample_cpu:.2f} s CPU")
        from_log, log_cpu = lag_cycles(bootstrap, "on", CYCLES)
        from_fetch, fetch_cpu = lag_cycles(bootstrap, "off", 1)
    context = f"; load average {load:.1f} at start on {os.cpu_count()} shared cores"
    per_commit_us = (reader_cpu + sample_cpu) / commits * 1e6
    return [
        Result("CPU per commit read (decode + table + sample)", per_commit_us, "µs", CPU_PER_COMMIT_BAR_US, "max",
               f"{commits:,} commits; reader thread {reader_cpu / commits * 1e6:.2f} µs + samples "
               f"{sample_cpu / commits * 1e6:.2f} µs; whole process incl. librdkafka "
               f"{process_cpu / commits * 1e6:.2f} µs{context}"),
        Result("lag cycle, 100,000 group-partitions from the commit log", statistics.median(from_log), "s", None,
               note=f"median of {len(from_log)}, no OffsetFetch; collector CPU {log_cpu:.2f} s per cycle"),
        Result("lag cycle, 100,000 group-partitions by OffsetFetch (same broker)", from_fetch[0], "s", None,
               note=f"5,000 OffsetFetch requests; collector CPU {fetch_cpu:.2f} s per cycle"),
    ]  # fmt: skip


if __name__ == "__main__":
    for row in run():
        print(f"{row.name}: {row.figure:,.2f} {row.unit} ({row.verdict}) {row.note}")
