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
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from collectors.base import Collector, SampleFactory, ScrapeResult
from collectors.coordinator import AllTargets, GroupAssignment, TargetAssignment
from collectors.publisher import SamplePublisher
from lagwatch.config import Config
from lagwatch.gc_pause import cyclic_gc_paused
from lagwatch.kafka import (
    check_reachable,
    cluster_client_config,
    cluster_for,
    ensure_samples_topic,
    transport_client_config,
)
from lagwatch.samples import Sample
from lagwatch.stop_signals import stop_on_signals
from lagwatch.vocabulary import Source

log = logging.getLogger(__name__)


def build_collectors(config: Config) -> list[Collector]:
    """The admin collector for the cluster plus one collector per configured JMX target."""
    from collectors.admin import AdminCollector
    from collectors.jmx.collector import build_jmx_collectors

    return [AdminCollector(config), *build_jmx_collectors(config)]


def instance_id(config: Config) -> str:
    return config.collect.instance_id or f"{socket.gethostname()}-{os.getpid()}"


@dataclass
class CycleSummary:
    ok: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    samples: int = 0
    duration_s: float = 0.0

    def line(self) -> str:
        failed = f" ({', '.join(self.failed)})" if self.failed else ""
        return (
            f"targets ok {len(self.ok)}, failed {len(self.failed)}{failed}, "
            f"samples published {self.samples} in {self.duration_s:.2f} s"
        )


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
        self.make = SampleFactory(cluster=config.cluster.name, collector=instance)
        self.instance = instance
        self._pool = ThreadPoolExecutor(max_workers=min(32, max(1, len(collectors))), thread_name_prefix="scrape")

    def cycle(self) -> CycleSummary:
        started = time.monotonic()
        ts = int(time.time() * 1000)
        owned = [self.collectors[name] for name in self.assignment.owned() if name in self.collectors]
        futures: dict[Future[tuple[ScrapeResult, float]], Collector] = {
            self._pool.submit(_timed_collect, c, ts, self.make): c for c in owned
        }
        # Backends enforce their own timeouts; this is the last line of defence.
        done, not_done = wait(futures, timeout=self.config.collect.timeout_s + 5)
        summary = CycleSummary()
        for future, collector in futures.items():
            if future in done:
                result, duration = future.result()
            else:
                result = ScrapeResult(collector.name, ok=False, errors=["scrape did not return in time"])
                duration = time.monotonic() - started
            for error in result.errors:
                log.warning("%s: %s", collector.name, error)
            (summary.ok if result.ok else summary.failed).append(collector.name)
            summary.samples += self.publisher.publish(_target_samples(collector, result, duration, ts, self.make))
        summary.samples += self.publisher.publish(self._heartbeat(ts, len(owned)))
        summary.duration_s = time.monotonic() - started
        if not_done:
            log.error("targets still scraping after their timeout: %s", ", ".join(futures[f].name for f in not_done))
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
                next_cycle += interval
                if next_cycle < time.monotonic():  # a cycle overran: skip, don't pile up
                    log.warning("cycle took %.1f s, longer than interval_s %.1f s", summary.duration_s, interval)
                    next_cycle = time.monotonic() + interval
            self._publish_events()
            self.publisher.serve(0.1)

    def _publish_events(self) -> None:
        """Samples an owned collector has ready between cycles (the commit log's membership changes)."""
        for name in self.assignment.owned():
            events = getattr(self.collectors.get(name), "events", None)
            if events is not None:
                self.publisher.publish(events(self.make))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for collector in self.collectors.values():
            collector.close()
        self.assignment.close()


def run(config: Config, args: argparse.Namespace) -> int:
    with cluster_for(config) as config:
        check_reachable(
            cluster_client_config(config), cluster=config.cluster.name, timeout_s=config.collect.timeout_s + 5
        )
        transport = transport_client_config(config)
        check_reachable(transport, cluster="transport", timeout_s=config.collect.timeout_s + 5)
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
