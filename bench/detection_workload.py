"""The detection bench's workload processes: one producer, and one consumer per scenario.

Each runs as its own process (`python -m bench.detection_workload produce|consume …`) so a
consumer can be killed with SIGKILL, exit cleanly or freeze without touching the others, as a
real consumer host would. A consumer behaves healthily (consumes everything, auto-commits every
5 s) until it gets SIGUSR1, "the change"; then it does what its behaviour says and prints one
line `changed <epoch ms>` on stdout. SIGTERM stops any of them (close, leave the group, exit 0).
A consumer joins with the classic group protocol or with KIP-848's (`--protocol consumer`); a
KIP-848 member leaves the session and heartbeat timeouts and the assignor to the broker, which
owns them under that protocol (librdkafka refuses them there).

Behaviours after the change:
- healthy: nothing changes;
- slow: consumes at `slow_share` of the produce rate (lag rises);
- dead: closes the consumer (commit, LeaveGroup) and exits;
- stuck: stops calling poll() but stays alive (still a member until max.poll.interval.ms);
- rewinding: seeks every assigned partition back by `rewind_records`, commits that offset and
  goes on consuming.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from types import FrameType

from confluent_kafka import Consumer, Producer, TopicPartition

BEHAVIOURS = ("healthy", "slow", "dead", "stuck", "rewinding")
#: `group.protocol` values: the classic rebalance protocol, or KIP-848's broker-driven one.
PROTOCOLS = ("classic", "consumer")
#: Records each partition of every topic gets per second.
RATE_PER_PARTITION = 20
#: Producer ticks per second (records go out in small batches, as a steady producer's do).
TICKS_PER_S = 10
SLOW_SHARE = 0.5
REWIND_RECORDS = 500


class Flags:
    """Set from signal handlers, read by the loops between polls."""

    changed = False
    stopping = False


def _on_change(_signum: int, _frame: FrameType | None) -> None:
    Flags.changed = True


def _on_stop(_signum: int, _frame: FrameType | None) -> None:
    Flags.stopping = True


def produce(bootstrap: str, topics: list[str], partitions: int) -> None:
    """RATE_PER_PARTITION records/s into every partition of `topics` until SIGTERM."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    per_tick = RATE_PER_PARTITION / TICKS_PER_S
    started, tick, owed = time.monotonic(), 0, 0.0
    while not Flags.stopping:
        owed += per_tick
        count, owed = int(owed), owed - int(owed)
        for topic in topics:
            for partition in range(partitions):
                for _ in range(count):
                    producer.produce(topic, b"x" * 64, partition=partition)
        producer.poll(0)
        tick += 1
        time.sleep(max(0.0, started + tick / TICKS_PER_S - time.monotonic()))
    producer.flush(10)


class ScenarioConsumer:
    """One group member consuming `topic`; healthy until the change, then its behaviour."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, behaviour: str, produce_rate: float, protocol: str = "classic"
    ) -> None:
        self.behaviour = behaviour
        self.topic = topic
        self.slow_rate = produce_rate * SLOW_SHARE
        settings = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"{group}-consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "group.protocol": protocol,
        }
        if behaviour == "rewinding":  # it stores what it processed, so a rewind is not undone by auto-commit
            settings["enable.auto.offset.store"] = False
        self.consumer = Consumer(settings)
        self.consumer.subscribe([topic])
        self.changed_at = 0.0
        self.consumed_since_change = 0

    def run(self) -> None:
        while not Flags.stopping:
            if Flags.changed and not self.changed_at:
                self.changed_at = time.time()
                self._change()
                print(f"changed {int(self.changed_at * 1000)}", flush=True)
                if self.behaviour == "dead":
                    return
            if self.changed_at and self.behaviour == "stuck":
                time.sleep(0.2)
                continue
            self._consume_one_poll()
        self.consumer.close()

    def _change(self) -> None:
        if self.behaviour == "dead":
            self.consumer.close()
        elif self.behaviour == "rewinding":
            self._rewind()

    def _rewind(self) -> None:
        """Every assigned partition back by REWIND_RECORDS, that offset committed at once."""
        positions = self.consumer.position(self.consumer.assignment())
        back = [TopicPartition(self.topic, tp.partition, max(0, tp.offset - REWIND_RECORDS)) for tp in positions]
        for tp in back:
            self.consumer.seek(tp)
        self.consumer.store_offsets(offsets=back)
        self.consumer.commit(offsets=back, asynchronous=False)

    def _consume_one_poll(self) -> None:
        message = self.consumer.poll(0.2)
        if message is None or message.error():
            return
        if self.behaviour == "rewinding":
            self.consumer.store_offsets(message=message)
        if self.changed_at and self.behaviour == "slow":
            self.consumed_since_change += 1
            due = self.changed_at + self.consumed_since_change / self.slow_rate
            time.sleep(max(0.0, due - time.time()))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.detection_workload")
    sub = parser.add_subparsers(dest="role", required=True)
    producer = sub.add_parser("produce")
    producer.add_argument("--bootstrap", required=True)
    producer.add_argument("--partitions", type=int, required=True)
    producer.add_argument("topics", nargs="+")
    consumer = sub.add_parser("consume")
    consumer.add_argument("--bootstrap", required=True)
    consumer.add_argument("--group", required=True)
    consumer.add_argument("--topic", required=True)
    consumer.add_argument("--partitions", type=int, required=True)
    consumer.add_argument("--behaviour", choices=BEHAVIOURS, required=True)
    consumer.add_argument("--protocol", choices=PROTOCOLS, default="classic")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_stop)
    signal.signal(signal.SIGINT, _on_stop)
    signal.signal(signal.SIGUSR1, _on_change)
    if args.role == "produce":
        produce(args.bootstrap, args.topics, args.partitions)
    else:
        rate = RATE_PER_PARTITION * args.partitions
        ScenarioConsumer(args.bootstrap, args.group, args.topic, args.behaviour, rate, args.protocol).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
