"""Soak: the commit-log reader against a real Kafka broker while classic, KIP-848 and share groups
join, leave and commit, for `--minutes` (10 by default).

`python -m bench.commit_log_soak [--minutes 10]` (KAFKA_HOME as for the tests; 4.3.1 for share and
KIP-848 groups). Every few seconds a member of one of the groups joins or leaves (each group keeps
one to three members, auto-committing every second); a producer keeps writing. At the end it prints
the records read, the membership changes per group protocol and state, the skipped records per
type, the decode errors and whether the reader was still running, and how long after each
member's close() the reader had the group's change (the latency of "a member left").
Exit status 1 if the reader stopped or met a decode error.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from collectors.admin.samples import NameFilter
from collectors.commit_log.reader import TOPIC, CommitLogReader
from harness.real_kafka import RealKafkaBroker
from lagwatch.kafka import ensure_topic

ALL = NameFilter([".*"], [])
TOPIC_NAME, PARTITIONS = "soak", 4


class Member:
    """One consumer on its own thread: polls (acknowledges, for a share consumer) until closed."""

    def __init__(self, bootstrap: str, group: str, kind: str, client_id: str, topic: str = TOPIC_NAME) -> None:
        self.kind, self.group = kind, group
        settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id}
        if kind == "share":
            self.consumer: Any = ShareConsumer({**settings, "share.acknowledgement.mode": "explicit"})
        else:
            settings.update({"auto.offset.reset": "earliest", "auto.commit.interval.ms": 1000})  # commits every second
            if kind == "consumer":
                settings["group.protocol"] = "consumer"
            self.consumer = Consumer(settings)
        self.consumer.subscribe([topic])
        self.stop = threading.Event()
        #: Cleared, the member stops polling: a revocation waits, as in an application busy with a batch.
        self.polling = threading.Event()
        self.polling.set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            if not self.polling.is_set():
                self.polling.wait(0.2)
                continue
            if self.kind == "share":
                for message in self.consumer.poll(0.2) or []:
                    if message.error() is None:
                        self.consumer.acknowledge(message)
            else:
                self.consumer.poll(0.2)
        self.consumer.close()

    def close(self) -> float:
        """Close cleanly (LeaveGroup); the wall time the close returned."""
        self.stop.set()
        self.thread.join(30)
        return time.time()


def run(minutes: float) -> int:
    with RealKafkaBroker() as broker:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        ensure_topic({"bootstrap.servers": bootstrap}, TOPIC_NAME, PARTITIONS)
        kinds = ["classic", "consumer"] + (["share"] if broker.version >= (4, 1, 0) else [])
        if "share" in kinds:
            entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
            for done in admin.incremental_alter_configs(
                [ConfigResource(ResourceType.GROUP, "soak-share", incremental_configs=[entry])]
            ).values():
                done.result()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        members: dict[str, list[Member]] = {
            kind: [Member(bootstrap, f"soak-{kind}", kind, f"{kind}-first")] for kind in kinds
        }
        reader = CommitLogReader({"bootstrap.servers": bootstrap}, "soak", ALL, ALL)
        reader.start(_offsets_partitions(admin))
        left: list[tuple[str, float]] = []  # (group, close time) of a member that left an otherwise empty group
        changes: Counter[tuple[str, str]] = Counter()
        latencies: list[float] = []
        rng = random.Random(7)
        deadline, step = time.monotonic() + minutes * 60, 0
        try:
            while time.monotonic() < deadline and reader.failure is None:
                for _ in range(200):
                    producer.produce(TOPIC_NAME, b"x", partition=rng.randrange(PARTITIONS))
                producer.poll(0)
                kind = kinds[step % len(kinds)]
                group = f"soak-{kind}"
                present = members[kind]
                if len(present) < 3 and (not present or rng.random() < 0.6):
                    present.append(Member(bootstrap, group, kind, f"{kind}-{step}"))
                else:
                    closed_at = present.pop(rng.randrange(len(present))).close()
                    if not present:
                        left.append((group, closed_at))
                step += 1
                until = time.monotonic() + 3
                while time.monotonic() < until:
                    for change in reader.drain_changes():
                        changes[(change.group_id, change.state)] += 1
                        if change.state == "Empty":
                            latencies.extend(change_latency(left, change.group_id))
                    reader.drain()
                    time.sleep(0.05)
        finally:
            for present in members.values():
                for member in present:
                    member.close()
            time.sleep(3)
            reader.close()
        ok = reader.failure is None and reader.decode_errors == 0
        print(f"Kafka {broker.version_text}, {minutes:g} min, {step} joins/leaves")
        print(f"records read {reader.records}, decode errors {reader.decode_errors}, reader failure {reader.failure}")
        print("membership changes: " + ", ".join(f"{g} {s} {n}" for (g, s), n in sorted(changes.items())))
        print("skipped: " + (", ".join(f"{kind} {n}" for kind, n in sorted(reader.skipped.items())) or "none"))
        if latencies:
            print(f"last member left → Empty read: median {statistics.median(latencies):.2f} s, "
                  f"max {max(latencies):.2f} s over {len(latencies)}")  # fmt: skip
        return 0 if ok else 1


def change_latency(left: list[tuple[str, float]], group: str) -> list[float]:
    """Seconds from the close() of the last member of `group` to now (the reader has the Empty)."""
    found = [closed for g, closed in left if g == group]
    left[:] = [(g, c) for g, c in left if g != group]
    return [max(0.0, time.time() - closed) for closed in found[-1:]]


def _offsets_partitions(admin: AdminClient) -> int:
    """Partitions of the commit log, once the first group made the broker create it."""
    give_up = time.monotonic() + 60
    while time.monotonic() < give_up:
        topic = admin.list_topics(timeout=10).topics.get(TOPIC)
        if topic is not None and topic.partitions:
            return len(topic.partitions)
        time.sleep(0.5)
    raise RuntimeError(f"no {TOPIC} after 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    raise SystemExit(run(parser.parse_args().minutes))


if __name__ == "__main__":
    main()
