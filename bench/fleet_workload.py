"""The fleet bench's workload: many consumer groups whose commits move, a few left lagging.

Runs as its own process (`python -m bench.fleet_workload BOOTSTRAP --groups N`) so its CPU is
measured apart from Lagwatch's. Groups have no members: they commit through the admin API
(alter_consumer_group_offsets), which is what the commit log and OffsetFetch see of a busy
consumer fleet. Groups share topics so the broker holds a bounded number of partitions
(open files): group g commits on every partition of topic g % topics.

Every cycle (the collector interval) one producer adds RECORDS_PER_CYCLE records to every
partition, and every active group commits at a lag that moves per group and cycle. Every
LAGGING_EVERY-th group commits once at setup and never again, so its lag grows with its topic
(the "lagging/stopped" share). Setup commits through the admin API and checks the group list;
the cycles' commits go as pipelined OffsetCommit requests on raw sockets (bench/fleet_commits.py),
which cost a small fraction of the admin API's CPU per group.

A simple mix on purpose: KIP-848 members, stalled members and rewinding groups are for a later
workload. Prints `ready` once every group is committed and listed, then one `cycle …` line each.
SIGTERM stops it between cycles.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from concurrent.futures import Future, wait
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.fleet_commits import Commit, Committer

PARTITIONS = 10
#: At most this many topics: topics × partitions bounds the broker's open files.
MAX_TOPICS = 300
#: Records every partition gets at setup, so each has an end offset before the first commit.
SETUP_RECORDS = 50
RECORDS_PER_CYCLE = 5
#: Committed offsets trail the end by 0..MAX_LAG-1 records, varying per group and cycle.
MAX_LAG = 40
#: Every LAGGING_EVERY-th group stops committing after setup (4 %).
LAGGING_EVERY = 25
IN_FLIGHT = 512


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def topic_count(groups: int) -> int:
    return max(1, min(MAX_TOPICS, groups))


def topic_name(index: int) -> str:
    return f"fleet-{index:03d}"


def group_name(group: int) -> str:
    return f"fleet-group-{group:06d}"


def lagging(group: int) -> bool:
    return group % LAGGING_EVERY == LAGGING_EVERY // 2


class Fleet:
    """The topics' end offsets as produced, and the groups' commits against them."""

    def __init__(self, bootstrap: str, groups: int) -> None:
        self.groups = groups
        self.topics = topic_count(groups)
        settings = {"bootstrap.servers": bootstrap}
        self.admin = AdminClient(settings)
        self.producer = Producer({**settings, "linger.ms": 50, "acks": "all", "batch.num.messages": 10_000,
                                  "queue.buffering.max.messages": 1_000_000})  # fmt: skip
        self.ends: dict[tuple[str, int], int] = {}
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.committer = Committer(host, int(port))

    def create_topics(self) -> None:
        futures = self.admin.create_topics([NewTopic(topic_name(i), PARTITIONS, 1) for i in range(self.topics)])
        for future in futures.values():
            future.result(120)

    def produce(self, records: int) -> None:
        """`records` more into every partition; `ends` follows each partition's end offset."""
        for index in range(self.topics):
            for partition in range(PARTITIONS):
                for _ in range(records):
                    self.producer.produce(topic_name(index), b"fleet-record", partition=partition)
                key = (topic_name(index), partition)
                self.ends[key] = self.ends.get(key, 0) + records
            self.producer.poll(0)
        if self.producer.flush(120):
            raise RuntimeError("fleet workload: records not delivered within 120 s")

    def offsets(self, group: int, cycle: int) -> Commit:
        """The group's commit on every partition of its topic, behind the end by a lag that moves per cycle."""
        topic = topic_name(group % self.topics)
        ends = [self.ends[(topic, p)] for p in range(PARTITIONS)]
        return group_name(group), topic, [max(0, end - (group + p + cycle) % MAX_LAG) for p, end in enumerate(ends)]

    def request(self, group: int, cycle: int) -> list[ConsumerGroupTopicPartitions]:
        group_id, topic, offsets = self.offsets(group, cycle)
        return [ConsumerGroupTopicPartitions(group_id, [TopicPartition(topic, p, o) for p, o in enumerate(offsets)])]

    def commit_pipelined(self, groups: list[int], cycle: int) -> int:
        """The cycle's commits on raw sockets; returns the partitions refused."""
        return self.committer.commit(self.offsets(group, cycle) for group in groups)

    def commit(self, groups: list[int], cycle: int) -> int:
        """Commit `groups`, IN_FLIGHT requests at a time; returns how many failed."""
        in_flight: list[Future[Any]] = []
        failed = 0
        for group in groups:
            in_flight.append(self.admin.alter_consumer_group_offsets(self.request(group, cycle))[group_name(group)])
            if len(in_flight) >= IN_FLIGHT:
                done, pending = wait(in_flight, return_when="FIRST_COMPLETED")
                failed += sum(1 for future in done if future.exception(0) is not None)
                in_flight = list(pending)
        for future in in_flight:
            failed += future.exception(60) is not None
        return failed

    def listed(self) -> set[str]:
        return {g.group_id for g in self.admin.list_consumer_groups(request_timeout=120).result(180).valid or []}


def set_up(fleet: Fleet) -> None:
    """Topics, records, and every group committed and listed (a loading coordinator may lose a commit)."""
    fleet.create_topics()
    fleet.produce(SETUP_RECORDS)
    for _attempt in range(40):
        fleet.commit([0], 0)
        if group_name(0) in fleet.listed():
            break
        time.sleep(0.5)
    missing = list(range(fleet.groups))
    for attempt in range(4):
        started = time.monotonic()
        fleet.commit(missing, 0)
        listed = fleet.listed()
        missing = [g for g in missing if group_name(g) not in listed]
        say(f"setup commit {attempt + 1}: {time.monotonic() - started:.1f} s, {len(missing)} groups not listed")
        if not missing:
            return
    raise RuntimeError(f"fleet workload: {len(missing)} groups still not listed after four commits")


def run(fleet: Fleet, interval_s: float, stop: threading.Event) -> None:
    active = [g for g in range(fleet.groups) if not lagging(g)]
    cycle = 1
    while not stop.is_set():
        started = time.monotonic()
        fleet.produce(RECORDS_PER_CYCLE)
        failed = fleet.commit_pipelined(active, cycle)
        took = time.monotonic() - started
        say(f"cycle {cycle}: {len(active)} groups committed in {took:.2f} s, {failed} partitions refused")
        cycle += 1
        stop.wait(max(0.0, interval_s - took))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_workload")
    parser.add_argument("bootstrap")
    parser.add_argument("--groups", type=int, required=True)
    parser.add_argument("--interval-s", type=float, default=15.0)
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    fleet = Fleet(args.bootstrap, args.groups)
    set_up(fleet)
    say(f"ready: {fleet.groups} groups on {fleet.topics} topics × {PARTITIONS} partitions")
    run(fleet, args.interval_s, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
