"""The soak's extra load: 500 consumer groups × 10 partitions whose committed offsets keep moving.

Cheap by design, so the soak measures Lagwatch and not its workload: every cycle (the collector
interval) one producer adds a few records to every partition of TOPICS topics, and every group
commits through the admin API (alter_consumer_group_offsets, no members) at a lag that varies
per group and cycle. The collectors then read 5,000 committed offsets per cycle, and the commit
log sees 5,000 commits, as with a busy cluster's consumers.

Beside them, on a thread, the demo's groups (healthy, slow, stopped, stalled, rewinding) run
as the applications Lagwatch watches: `lagwatch up` runs no demo on a configured cluster.

Runs as its own process (`python -m bench.soak.workload BOOTSTRAP`), so its CPU is not charged
to the soak's sampler or browser; SIGTERM stops it between cycles.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from lagwatch.config import parse_config
from lagwatch.kafka import ensure_topic
from shell.demo import DemoWorkload

GROUPS = 500
PARTITIONS = 10
TOPICS = 10
#: Records added to every partition per cycle (batched: a real broker's ordinary produce).
RECORDS_PER_CYCLE = 20
#: Committed offsets trail the end by 0..MAX_LAG-1 records, varying per group and cycle.
MAX_LAG = 15
IN_FLIGHT = 128


def topic_name(index: int) -> str:
    return f"soak-{index:02d}"


def group_name(group: int) -> str:
    return f"soak-group-{group:04d}"


def produce_cycle(producer: Producer, ends: dict[tuple[str, int], int]) -> None:
    """RECORDS_PER_CYCLE records into every partition; `ends` tracks each partition's end offset."""
    for index in range(TOPICS):
        topic = topic_name(index)
        for partition in range(PARTITIONS):
            for _ in range(RECORDS_PER_CYCLE):
                producer.produce(topic, b"soak-record", partition=partition)
            ends[(topic, partition)] = ends.get((topic, partition), 0) + RECORDS_PER_CYCLE
        producer.poll(0)
    if producer.flush(30):
        raise RuntimeError("soak workload: records not delivered within 30 s")


def group_request(group: int, ends: dict[tuple[str, int], int], cycle: int) -> list[ConsumerGroupTopicPartitions]:
    """The group's commit on all partitions of its topic, behind the end by a lag that moves per cycle."""
    topic = topic_name(group % TOPICS)
    lags = [(group + p + cycle) % MAX_LAG for p in range(PARTITIONS)]
    offsets = [TopicPartition(topic, p, max(0, ends[(topic, p)] - lag)) for p, lag in enumerate(lags)]
    return [ConsumerGroupTopicPartitions(group_name(group), offsets)]


def commit_cycle(admin: AdminClient, ends: dict[tuple[str, int], int], cycle: int) -> None:
    """Every group commits (one request per group: the admin API takes one group a call), IN_FLIGHT at a time."""
    for first in range(0, GROUPS, IN_FLIGHT):
        chunk = range(first, min(GROUPS, first + IN_FLIGHT))
        pending = [admin.alter_consumer_group_offsets(group_request(g, ends, cycle))[group_name(g)] for g in chunk]
        for future in pending:
            future.result(30)


def run(bootstrap: str, interval_s: float, stop: threading.Event) -> int:
    """Cycles until `stop`; returns how many ran."""
    settings = {"bootstrap.servers": bootstrap}
    for index in range(TOPICS):
        ensure_topic(settings, topic_name(index), PARTITIONS)
    producer = Producer({**settings, "linger.ms": 20, "acks": "all"})
    admin = AdminClient(settings)
    ends: dict[tuple[str, int], int] = {}
    cycle = 0
    while not stop.is_set():
        started = time.monotonic()
        produce_cycle(producer, ends)
        try:
            commit_cycle(admin, ends, cycle)
        except Exception as exc:  # a coordinator still loading: the next cycle commits again
            print(f"soak workload: cycle {cycle} commit failed: {exc}", file=sys.stderr, flush=True)
        cycle += 1
        stop.wait(max(0.0, interval_s - (time.monotonic() - started)))
    return cycle


def run_demo(bootstrap: str, stop: threading.Event) -> None:
    """The demo's workload on the soak's broker, one tick a second until `stop`."""
    workload = DemoWorkload(parse_config({"cluster": {"bootstrap_servers": bootstrap}}, environ={}))
    workload.setup()
    try:
        while not stop.wait(1.0):
            workload.tick()
    finally:
        workload.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak.workload")
    parser.add_argument("bootstrap")
    parser.add_argument("--interval-s", type=float, default=5.0)
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    demo = threading.Thread(target=run_demo, args=(args.bootstrap, stop), name="demo-groups")
    demo.start()
    cycles = run(args.bootstrap, args.interval_s, stop)
    demo.join()
    print(f"soak workload: {cycles} cycles", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
