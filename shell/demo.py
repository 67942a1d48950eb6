"""`lagwatch demo`: a local workload with every kind of consumer a lag tool must judge.

Topics with different rates and partition counts, and consumer groups that behave like the
ones operators page about: healthy, slow (lag and time lag rising), stopped (no commits),
stalled (commits that do not advance while lag grows) and rewinding (the committed offset
jumps back). A broker-JMX simulator serves Prometheus exporter text whose counters follow the
demo's real produce and consume counts; it is labelled as simulated everywhere (broker id
`sim-1`), because tansu has no JMX of its own.

The demo runs only on the embedded broker: it creates topics and commits offsets as consumer
groups, and a monitor must never write into a cluster it watches, so pointed at a configured
cluster it refuses before connecting. Its topics and groups are named `lagwatch-demo…` so they
are never mistaken for real ones. Records go out one per produce batch so tansu reports true
end offsets (docs/architecture.md). Groups commit with explicit offsets and no group
membership (assign, not subscribe): their behaviour is then exact and deterministic, and Kafka
lists them as empty groups, which Lagwatch keeps evaluating.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from lagwatch import exit_codes
from lagwatch.config import Config
from lagwatch.config.demo import SIMULATED_BROKER
from lagwatch.kafka import TANSU_PRODUCER_SETTINGS, check_reachable, cluster_client_config, ensure_topic
from lagwatch.stop_signals import stop_on_signals
from shell.broker import cluster_for
from shell.metrics_text import MetricsTextServer

log = logging.getLogger(__name__)

#: Commit errors a real consumer retries: the group's coordinator is moving, starting or loading.
COORDINATOR_NOT_READY = frozenset(
    {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS}
)

#: Every demo topic and group starts with this, so none is mistaken for a real one (and none
#: for Lagwatch's own `lagwatch.*` topics and `lagwatch-collectors` group).
DEMO_PREFIX = "lagwatch-demo"


@dataclass(frozen=True)
class DemoTopic:
    name: str
    partitions: int
    #: Share of the demo's total rate.
    weight: float


@dataclass(frozen=True)
class DemoGroup:
    group_id: str
    topic: str
    #: healthy | slow | stopped | stalled | rewinding
    behaviour: str
    #: Fraction of the produce rate this group consumes (slow < 1).
    speed: float = 1.0


TOPICS = (
    DemoTopic(f"{DEMO_PREFIX}.orders", 6, 0.5),
    DemoTopic(f"{DEMO_PREFIX}.payments", 3, 0.3),
    DemoTopic(f"{DEMO_PREFIX}.audit", 1, 0.2),
)

GROUPS = (
    DemoGroup(f"{DEMO_PREFIX}-orders-service", f"{DEMO_PREFIX}.orders", "healthy"),
    DemoGroup(f"{DEMO_PREFIX}-orders-analytics", f"{DEMO_PREFIX}.orders", "slow", speed=0.5),
    DemoGroup(f"{DEMO_PREFIX}-payments-ledger", f"{DEMO_PREFIX}.payments", "healthy"),
    DemoGroup(f"{DEMO_PREFIX}-payments-archiver", f"{DEMO_PREFIX}.payments", "stopped"),
    DemoGroup(f"{DEMO_PREFIX}-audit-indexer", f"{DEMO_PREFIX}.audit", "stalled"),
    DemoGroup(f"{DEMO_PREFIX}-orders-replayer", f"{DEMO_PREFIX}.orders", "rewinding"),
)


@dataclass
class DemoCounters:
    """What the demo really did; the JMX simulator reports exactly these."""

    produced: dict[str, int] = field(default_factory=dict)
    produced_bytes: dict[str, int] = field(default_factory=dict)
    consumed: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


class DemoWorkload:
    """Produces to the demo topics and commits for the demo groups, one tick per second."""

    def __init__(self, config: Config, embedded: bool = False) -> None:
        self.settings = cluster_client_config(config)
        self.rate = config.demo.rate
        self.counters = DemoCounters()
        self._end: dict[tuple[str, int], int] = {}
        self._committed: dict[tuple[str, str, int], int] = {}
        tansu = {**TANSU_PRODUCER_SETTINGS, "linger.ms": 0} if embedded else {}
        self._producer = Producer({**self.settings, "acks": "all", **tansu})
        self._committers: dict[str, Consumer] = {}
        self._tick = 0
        self.ticks = 0

    def setup(self) -> None:
        for topic in TOPICS:
            ensure_topic(self.settings, topic.name, topic.partitions)
        log.info(
            "demo: topics %s; groups %s",
            ", ".join(t.name for t in TOPICS),
            ", ".join(f"{g.group_id} ({g.behaviour})" for g in GROUPS),
        )

    def tick(self) -> None:
        """One second of workload: produce, then let every group act."""
        self._tick += 1
        self.ticks = self._tick
        for topic in TOPICS:
            self._produce(topic, max(1, round(self.rate * topic.weight)))
        self._producer.flush(10)
        for group in GROUPS:
            self._act(group)

    def _produce(self, topic: DemoTopic, count: int) -> None:
        for i in range(count):
            partition = (self._tick + i) % topic.partitions
            value = f'{{"demo":"{topic.name}","seq":{self._tick}-{i}}}'.encode()
            self._producer.produce(topic.name, value=value, partition=partition)
            self._end[(topic.name, partition)] = self._end.get((topic.name, partition), 0) + 1
            with self.counters.lock:
                self.counters.produced[topic.name] = self.counters.produced.get(topic.name, 0) + 1
                self.counters.produced_bytes[topic.name] = self.counters.produced_bytes.get(topic.name, 0) + len(value)
        self._producer.poll(0)

    def _target_offset(self, group: DemoGroup, partition: int) -> int | None:
        """Where this group's committed offset goes this tick (None: no commit)."""
        end = self._end.get((group.topic, partition), 0)
        current = self._committed.get((group.group_id, group.topic, partition), 0)
        if group.behaviour == "healthy":
            return end
        if group.behaviour == "slow":
            return max(current, int(end * group.speed))  # consumes a fixed share: lag grows steadily
        if group.behaviour == "stopped":
            return end if self._tick <= 20 else None  # consumed for 20 s, then gone
        if group.behaviour == "stalled":
            return min(end, 10) if self._tick > 1 else 0  # keeps committing offset 10
        if group.behaviour == "rewinding":
            return max(0, end - 200) if self._tick % 120 == 60 else end  # replays every 2 minutes
        raise ValueError(f"unknown demo behaviour {group.behaviour!r}")

    def _act(self, group: DemoGroup) -> None:
        topic = next(t for t in TOPICS if t.name == group.topic)
        offsets = []
        for partition in range(topic.partitions):
            target = self._target_offset(group, partition)
            if target is None:
                continue
            key = (group.group_id, group.topic, partition)
            with self.counters.lock:
                consumed = max(0, target - self._committed.get(key, 0))
                self.counters.consumed[group.topic] = self.counters.consumed.get(group.topic, 0) + consumed
            self._committed[key] = target
            offsets.append(TopicPartition(group.topic, partition, target))
        if offsets:
            self._commit(group.group_id, offsets)

    def _commit(self, group_id: str, offsets: list[TopicPartition]) -> None:
        """Commit now; a coordinator that is moving or still loading (a fresh broker's
        __consumer_offsets, a restart) only delays the commit to the next tick, as it would a
        real consumer's, instead of ending the demo and the stack with it."""
        if group_id not in self._committers:
            self._committers[group_id] = Consumer({**self.settings, "group.id": group_id, "enable.auto.commit": False})
        try:
            self._committers[group_id].commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.code() not in COORDINATOR_NOT_READY:
                raise
            log.warning("demo: commit for group %s deferred to the next tick: %s", group_id, error.str())

    def close(self) -> None:
        self._producer.flush(10)
        for consumer in self._committers.values():
            consumer.close()


def exporter_text(counters: DemoCounters) -> str:
    """Prometheus JMX-exporter text for the simulated broker, from the demo's real counts."""
    with counters.lock:
        produced = dict(counters.produced)
        produced_bytes = dict(counters.produced_bytes)
        consumed = dict(counters.consumed)
    lines = ["# simulated broker JMX (lagwatch demo): counters follow the demo's real traffic"]
    lines.append("# TYPE kafka_server_brokertopicmetrics_messagesin_total counter")
    lines.append(f"kafka_server_brokertopicmetrics_messagesin_total {sum(produced.values())}")
    lines += [f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{t}"}} {n}' for t, n in produced.items()]
    lines.append("# TYPE kafka_server_brokertopicmetrics_bytesin_total counter")
    lines.append(f"kafka_server_brokertopicmetrics_bytesin_total {sum(produced_bytes.values())}")
    lines += [f'kafka_server_brokertopicmetrics_bytesin_total{{topic="{t}"}} {n}' for t, n in produced_bytes.items()]
    lines.append("# TYPE kafka_server_brokertopicmetrics_bytesout_total counter")
    avg_size = sum(produced_bytes.values()) / max(1, sum(produced.values()))
    lines.append(f"kafka_server_brokertopicmetrics_bytesout_total {int(sum(consumed.values()) * avg_size)}")
    partitions = sum(t.partitions for t in TOPICS)
    gauges = {
        "kafka_server_replicamanager_partitioncount": partitions,
        "kafka_server_replicamanager_leadercount": partitions,
        "kafka_server_replicamanager_underreplicatedpartitions": 0,
        "kafka_server_replicamanager_underminisrpartitioncount": 0,
        "kafka_controller_kafkacontroller_activecontrollercount": 1,
        "kafka_controller_kafkacontroller_offlinepartitionscount": 0,
        "kafka_network_socketserver_networkprocessoravgidlepercent": 0.97,
    }
    for name, value in gauges.items():
        lines += [f"# TYPE {name} gauge", f"{name} {value}"]
    lines += [
        "# TYPE kafka_controller_controllerstats_leaderelectionrateandtimems_count counter",
        "kafka_controller_controllerstats_leaderelectionrateandtimems_count 1",
    ]
    return "\n".join(lines) + "\n"


def serve_exporter(counters: DemoCounters, port: int) -> MetricsTextServer:
    return MetricsTextServer(lambda: exporter_text(counters), port, name="demo-jmx-sim")


def refusal(config: Config) -> str | None:
    """Why the demo must not run on this config's cluster (None: it may). Decided from the config
    alone, before any connection, so a configured cluster is never touched."""
    if config.on_embedded_broker:
        return None
    return (
        f"lagwatch demo runs only on the embedded broker: cluster {config.cluster.name!r} "
        f"({config.cluster.bootstrap_servers}) is a configured cluster, which Lagwatch only watches, and the demo "
        "would create topics and commit offsets as consumer groups on it. To run the demo, use a config with "
        "no bootstrap_servers (and no [[clusters]]): Lagwatch then starts its embedded tansu broker."
    )


def run(config: Config, args: argparse.Namespace) -> int:
    refused = refusal(config)
    if refused:
        print(f"lagwatch: {refused}", file=sys.stderr)
        return exit_codes.BAD_INPUT
    with cluster_for(config) as config:
        check_reachable(cluster_client_config(config))
        workload = DemoWorkload(config, embedded=True)
        workload.setup()
        server = serve_exporter(workload.counters, config.demo.jmx_sim_port)
        log.info("demo: simulated broker JMX (broker %s) at %s", SIMULATED_BROKER, config.demo.simulated_target().url)
        stop = threading.Event()
        stop_on_signals(stop, "stopping the demo")
        duration = float(getattr(args, "duration_s", 0) or 0)
        started = time.monotonic()
        try:
            while not stop.is_set() and (not duration or time.monotonic() - started < duration):
                tick_started = time.monotonic()
                workload.tick()
                stop.wait(max(0.0, 1.0 - (time.monotonic() - tick_started)))
        finally:
            workload.close()
            server.close()
        log.info("demo: stopped after %d ticks", workload.ticks)
    return 0
