"""One `Collector` per configured JMX target: picks the backend, turns readings into samples.

The runner calls `build_jmx_collectors(config)` (every cluster's targets) and then `collect(ts_ms, make)` on each
collector every cycle (it adds `up` and `scrape_duration_seconds` itself). A target that does
not answer is a failed scrape (ok=False) returned within the target's timeout, never an
exception; a bad ObjectName or a malformed exporter line is an error for that metric only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from collectors.base import Collector, SampleFactory, ScrapeResult
from collectors.jmx.backend import JmxBackend, JmxEndpoint, ReadResult, TargetDown
from collectors.jmx.mapping import MetricDef, metrics_for
from lagwatch.config import ClusterConfig, Config, JmxTarget
from lagwatch.samples import Sample
from lagwatch.vocabulary import Source

log = logging.getLogger(__name__)


def make_backend(target: JmxTarget, timeout_s: float, jvm_path: str = "") -> JmxBackend:
    """The backend `target.backend` names; imports are lazy so jpype loads only when used."""
    if target.backend == "prometheus":
        from collectors.jmx.prometheus_backend import PrometheusBackend

        return PrometheusBackend(target.url or "", timeout_s)
    endpoint = JmxEndpoint(target.host, target.port, timeout_s, target.username, target.password())
    if target.backend == "jmxquery":
        from collectors.jmx.jmxquery_backend import JmxqueryBackend

        return JmxqueryBackend(endpoint)
    from collectors.jmx.jpype_backend import JpypeBackend

    return JpypeBackend(endpoint, jvm_path)


class JmxCollector:
    """Scrapes one JMX endpoint (broker or consumer client) through its configured backend."""

    def __init__(
        self,
        target: JmxTarget,
        timeout_s: float,
        jvm_path: str = "",
        definitions: Sequence[MetricDef] | None = None,
        backend: JmxBackend | None = None,
        *,
        cluster: str = "",
        name: str = "",
    ) -> None:
        self.target = target
        self.timeout_s = target.timeout_s or timeout_s
        self.definitions = tuple(definitions or metrics_for("broker" if target.broker is not None else "client"))
        self.backend = backend or make_backend(target, self.timeout_s, jvm_path)
        self._cluster = cluster
        self._name = name or target.name

    @property
    def name(self) -> str:
        return self._name

    @property
    def cluster_name(self) -> str:
        return self._cluster

    @property
    def source(self) -> str:
        return Source.PROM if self.target.backend == "prometheus" else Source.JMX

    @property
    def labels(self) -> dict[str, str | None]:
        return {"broker": self.target.broker, "client_id": self.target.client_id}

    def collect(self, ts_ms: int, make: SampleFactory) -> ScrapeResult:
        try:
            read = self.backend.read(self.definitions)
        except TargetDown as exc:
            return ScrapeResult(self.name, ok=False, errors=[str(exc)])
        except Exception as exc:  # a backend bug must cost this target's scrape, not the cycle
            log.exception("%s: backend %s failed", self.name, self.target.backend)
            return ScrapeResult(self.name, ok=False, errors=[f"{type(exc).__name__}: {exc}"])
        return ScrapeResult(self.name, ok=True, samples=self._samples(read, ts_ms, make), errors=read.errors)

    def _samples(self, read: ReadResult, ts_ms: int, make: SampleFactory) -> list[Sample]:
        samples = []
        for reading in read.readings:
            definition = reading.definition
            samples.append(
                make(
                    ts=ts_ms,
                    source=self.source,
                    metric=definition.metric,
                    kind=definition.kind,
                    value=reading.value,
                    broker=self.target.broker,
                    topic=reading.labels.get("topic"),
                    client_id=reading.labels.get("client_id") or self.target.client_id,
                )
            )
        return samples

    def close(self) -> None:
        self.backend.close()


def target_name(config: Config, cluster: ClusterConfig, target: JmxTarget) -> str:
    """The target's own name in the one-cluster form (as before many clusters), else prefixed
    with its cluster: two clusters may run brokers with the same id behind the same address
    (a port-forward, a proxy), and coordination needs every name once."""
    return target.name if len(config.clusters) == 1 else f"{cluster.name}/{target.name}"


def build_jmx_collectors(config: Config) -> list[Collector]:
    """One collector per JMX target of every cluster (`Config.jmx_targets`: the demo's simulated one
    only on the embedded broker), each with its own timeout (else collect.timeout_s).

    When any target uses jpype, the in-process JVM starts here, on the caller's (main) thread
    and before the first cycle, so its start-up never eats into a scrape's timeout. Its RMI
    timeouts are process-wide, so they take the longest target timeout.
    """
    timeout_s, jvm_path = config.collect.timeout_s, config.jmx.jvm_path
    targets = [(cluster, target) for cluster in config.clusters for target in config.jmx_targets(cluster)]
    collectors: list[Collector] = [
        JmxCollector(t, timeout_s, jvm_path, cluster=c.name, name=target_name(config, c, t)) for c, t in targets
    ]
    jpype_timeouts = [t.timeout_s or timeout_s for _, t in targets if t.backend == "jpype"]
    if jpype_timeouts:
        from collectors.jmx.jpype_backend import ensure_jvm

        ensure_jvm(max(jpype_timeouts), jvm_path)
    return collectors
