"""`lagwatch collect`: scrape the targets this instance owns every interval and publish.

One cycle scrapes every owned target concurrently, each within its own timeout, adds the
uniform `up` and `scrape_duration_seconds` samples, and a heartbeat that carries the
publisher's produced/delivered/failed counts. A dead target costs one timeout and an up = 0,
never the cycle.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from collectors.base import Collector, SampleFactory, ScrapeResult
from collectors.coordinator import AllTargets, GroupAssignment, TargetAssignment
from collectors.publisher import SamplePublisher
from lagwatch.config import Config
from lagwatch.gc_pause import cyclic_gc_paused
from lagwatch.kafka import (
    KafkaRefused,
    KafkaUnreachable,
    check_reachable,
    cluster_client_config,
    ensure_samples_topic,
    transport_client_config,
)
from lagwatch.samples import Sample
from lagwatch.stop_signals import stop_on_signals
from lagwatch.vocabulary import Source

log = logging.getLogger(__name__)

#: Seconds past `collect.timeout_s` a cycle waits for a scrape whose backend ignored its timeout.
GRACE_S = 5.0


def build_collectors(config: Config) -> list[Collector]:
    """One admin collector per monitored cluster (`admin@<name>`) plus one collector per JMX
    target of each cluster; every name is unique across clusters (coordination maps names)."""
    from collectors.admin.collector import AdminCollector
    from collectors.jmx.collector import build_jmx_collectors

    return [*(AdminCollector(config, cluster) for cluster in config.clusters), *build_jmx_collectors(config)]


def instance_id(config: Config) -> str:
    return config.collect.instance_id or f"{socket.gethostname()}-{os.getpid()}"


@dataclass
class CycleSummary:
    ok: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    samples: int = 0
    duration_s: float = 0.0
    #: Per cluster: seconds from the cycle's start until its last target returned (and was published).
    cluster_s: dict[str, float] = field(default_factory=dict)
    #: Per cluster: its targets that failed this cycle.
    cluster_failed: dict[str, list[str]] = field(default_factory=dict)

    def line(self) -> str:
        failed = f" ({', '.join(self.failed)})" if self.failed else ""
        return (
            f"targets ok {len(self.ok)}, failed {len(self.failed)}{failed}, "
            f"samples published {self.samples} in {self.duration_s:.2f} s"
        )

    def clusters_line(self) -> str:
        """Each cluster's own finish time: a cluster that is down costs its own timeout, not the others'."""
        return "; ".join(
            f"{name} done in {seconds:.2f} s" + (f", failed {len(self.cluster_failed[name])}"
                                                 if self.cluster_failed.get(name) else "")
            for name, seconds in sorted(self.cluster_s.items())
        )  # fmt: skip

    def add(self, cluster: str, target: str, ok: bool, finished_s: float) -> None:
        (self.ok if ok else self.failed).append(target)
        self.cluster_s[cluster] = max(self.cluster_s.get(cluster, 0.0), finished_s)
        if not ok:
            self.cluster_failed.setdefault(cluster, []).append(target)


def _target_samples(
    collector: Collector, result: ScrapeResult, duration_s: float, ts: int, make: SampleFactory
) -> list[Sample]:
    """The scrape's own samples plus `up` and `scrape_duration_seconds` for the target."""
    labels = collector.labels
    health = [
        make(ts=ts, source=collector.source, metric="up", kind="gauge", value=1.0 if result.ok else 0.0, **labels),
        make(
            ts=ts, source=collector.source, metric="scrape_duration_seconds", kind="gauge", value=duration_s, **labels
        ),
    ]
    return [*result.samples, *health] if result.ok else health


def _cluster_of(collector: Collector, config: Config) -> str:
    """The collector's cluster; a collector built without one (a test's) belongs to the home cluster."""
    return collector.cluster_name or config.cluster.name


def _timed_collect(collector: Collector, ts: int, make: SampleFactory) -> tuple[ScrapeResult, float]:
    started = time.monotonic()
    try:
        result = collector.collect(ts, make)
    except Exception as exc:
        log.exception("collector %s raised", collector.name)
        result = ScrapeResult(collector.name, ok=False, errors=[f"{type(exc).__name__}: {exc}"])
    return result, time.monotonic() - started


class CollectLoop:
    """Owns the collectors, the publisher and the assignment; runs cycles."""

    def __init__(
        self,
        config: Config,
        collectors: list[Collector],
        publisher: SamplePublisher,
        assignment: TargetAssignment,
        instance: str,
    ) -> None:
        self.config = config
        self.collectors = {c.name: c for c in collectors}
        self.publisher = publisher
        self.assignment = assignment
        #: One factory per cluster: every sample carries the cluster of the target that made it.
        self.makers = {
            name: SampleFactory(cluster=name, collector=instance)
            for name in {c.name for c in config.clusters} | {_cluster_of(c, config) for c in collectors}
        }
        #: Heartbeats describe the instance, not a target: they go under the home cluster.
        self.make = self.makers[config.cluster.name]
        self.instance = instance
        self._pool = ThreadPoolExecutor(max_workers=min(32, max(1, len(collectors))), thread_name_prefix="scrape")

    def maker(self, collector: Collector) -> SampleFactory:
        return self.makers[_cluster_of(collector, self.config)]

    def scrapes(self, owned: list[Collector], ts: int) -> Iterator[tuple[Collector, ScrapeResult, float]]:
        """Every owned target's scrape, each as soon as it returns (not when the slowest has).

        Targets run concurrently and each backend keeps its own timeout, so a cluster that is down
        costs its own targets' timeouts and holds back nobody else's samples. `GRACE_S` past the
        longest timeout is the last line of defence: a scrape still running then is a failure.
        """
        started = time.monotonic()
        futures: dict[Future[tuple[ScrapeResult, float]], Collector] = {
            self._pool.submit(_timed_collect, c, ts, self.maker(c)): c for c in owned
        }
        pending = set(futures)
        try:
            for future in as_completed(futures, timeout=self.config.collect.timeout_s + GRACE_S):
                pending.discard(future)
                result, duration = future.result()
                yield futures[future], result, duration
        except TimeoutError:
            log.error("targets still scraping after their timeout: %s", ", ".join(futures[f].name for f in pending))
            for future in pending:
                collector = futures[future]
                yield (
                    collector,
                    ScrapeResult(collector.name, False, errors=["scrape did not return in time"]),
                    (time.monotonic() - started),
                )

    def cycle(self) -> CycleSummary:
        started = time.monotonic()
        ts = int(time.time() * 1000)
        owned = [self.collectors[name] for name in self.assignment.owned() if name in self.collectors]
        summary = CycleSummary()
        for collector, result, duration in self.scrapes(owned, ts):
            for error in result.errors:
                log.warning("%s: %s", collector.name, error)
            summary.samples += self.publisher.publish(
                _target_samples(collector, result, duration, ts, self.maker(collector))
            )
            summary.add(_cluster_of(collector, self.config), collector.name, result.ok, time.monotonic() - started)
        summary.samples += self.publisher.publish(self._heartbeat(ts, len(owned)))
        summary.duration_s = time.monotonic() - started
        return summary

    def _heartbeat(self, ts: int, assigned: int) -> list[Sample]:
        """Delivery counts per instance, so loss anywhere upstream of the lake is visible."""
        counts = self.publisher.counts
        values = {
            "collector_samples_produced_total": ("counter", counts.produced),
            "collector_samples_delivered_total": ("counter", counts.delivered),
            "collector_samples_failed_total": ("counter", counts.failed),
            "collector_targets_assigned": ("gauge", assigned),
        }
        return [
            self.make(ts=ts, source=Source.HEARTBEAT, metric=metric, kind=kind, value=value, client_id=self.instance)
            for metric, (kind, value) in values.items()
        ]

    def run_forever(self, stop: threading.Event) -> None:
        interval = self.config.collect.interval_s
        next_cycle = time.monotonic()
        while not stop.is_set():
            self.assignment.serve()
            if time.monotonic() >= next_cycle:
                # A big cluster's cycle makes a million short-lived tracked objects (offsets,
                # samples, futures): paused over the whole cycle, the cycle collector finds them
                # freed when it resumes instead of scanning them at every step.
                with cyclic_gc_paused():
                    summary = self.cycle()
                log.info("cycle: %s", summary.line())
                if len(self.config.clusters) > 1:
                    log.info("cycle per cluster: %s", summary.clusters_line())
                next_cycle += interval
                if next_cycle < time.monotonic():  # a cycle overran: skip, don't pile up
                    log.warning("cycle took %.1f s, longer than interval_s %.1f s", summary.duration_s, interval)
                    next_cycle = time.monotonic() + interval
            self._publish_events()
            self.publisher.serve(0.1)

    def _publish_events(self) -> None:
        """Samples an owned collector has ready between cycles (the commit log's membership changes)."""
        for name in self.assignment.owned():
            collector = self.collectors.get(name)
            events = getattr(collector, "events", None)
            if collector is not None and events is not None:
                self.publisher.publish(events(self.maker(collector)))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for collector in self.collectors.values():
            collector.close()
        self.assignment.close()


def check_clusters(config: Config) -> list[str]:
    """Ask every monitored cluster at start; returns the names of those that did not answer.

    One cluster: no answer is fatal (exit 3), as there is nothing else to collect. Many: they are
    asked at once, so start-up waits one timeout however many are down; one that does not answer
    is logged as an error naming it and collection goes on (its targets show up = 0 until it
    answers). A refusal (`KafkaRefused`: bad credentials, an untrusted certificate) is a mistake
    in the config, not an outage: fatal whatever the count.
    """
    timeout_s = config.collect.timeout_s + GRACE_S
    with ThreadPoolExecutor(max_workers=len(config.clusters), thread_name_prefix="reachable") as pool:
        answers = {
            cluster.name: pool.submit(
                check_reachable, cluster_client_config(config, cluster), timeout_s=timeout_s, cluster=cluster.name
            )
            for cluster in config.clusters
        }
    down = []
    for name, answer in answers.items():
        try:
            answer.result()
        except KafkaRefused:  # a mistake in the config, not an outage: no other cluster makes it right
            raise
        except KafkaUnreachable as exc:
            if len(config.clusters) == 1:  # nothing else to collect
                raise
            log.error("%s: collecting the other clusters; this one shows as down (up = 0) until it answers", exc)
            down.append(name)
    return down


def run(config: Config, args: argparse.Namespace) -> int:
    """Entry point of `lagwatch collect [--once]`; the shell has already pointed `config` at a broker."""
    check_clusters(config)
    transport = transport_client_config(config)
    check_reachable(transport, timeout_s=config.collect.timeout_s + GRACE_S, cluster="transport")
    ensure_samples_topic(config)
    return _run_collect(config, once=bool(getattr(args, "once", False)))


def _run_collect(config: Config, once: bool) -> int:
    instance = instance_id(config)
    collectors = build_collectors(config)
    names = [c.name for c in collectors]
    assignment: TargetAssignment = (
        GroupAssignment(config, names, instance) if config.collect.coordinate and not once else AllTargets(names)
    )
    publisher = SamplePublisher(config)
    loop = CollectLoop(config, collectors, publisher, assignment, instance)
    log.info(
        "collector %s: %d targets (%s), interval %.0f s",
        instance,
        len(names),
        ", ".join(names),
        config.collect.interval_s,
    )
    try:
        if once:
            summary = loop.cycle()
        else:
            stop = threading.Event()
            stop_on_signals(stop, "finishing the cycle, flushing, stopping")
            loop.run_forever(stop)
    finally:
        loop.close()
        undelivered = publisher.close()
    if once:
        print(f"collect: {summary.line()}, undelivered {undelivered}")
    return 1 if undelivered else 0
