"""What every collector is: the `Collector` protocol and the result of one scrape.

The runner only knows this protocol. A collector reads one target (a cluster's Admin API,
one JMX endpoint, one exporter URL) of one monitored cluster and returns samples plus whether
the target answered; the runner adds the uniform `up` and `scrape_duration_seconds` samples,
stamps the target's cluster on them all and publishes everything.
A collector never raises for a target problem: a dead target is a failed scrape (up = 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lagwatch import vocabulary
from lagwatch.samples import MemberSample, MetricSamples, Sample, make_sample, with_member


@dataclass(frozen=True)
class SampleFactory:
    """Stamps cluster and collector instance on every sample a collector makes.

    It also refuses a metric, kind or source that :mod:`lagwatch.vocabulary` does not register,
    so a new name fails in the collector's own tests instead of reaching rules that ignore it.
    """

    cluster: str
    collector: str

    def __call__(
        self,
        *,
        ts: int,
        source: str,
        metric: str,
        kind: str,
        value: float,
        broker: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        group_id: str | None = None,
        client_id: str | None = None,
    ) -> Sample:
        vocabulary.check_sample(metric, kind, source)
        return make_sample(
            ts=ts,
            cluster=self.cluster,
            source=source,
            collector=self.collector,
            metric=metric,
            kind=kind,
            value=value,
            broker=broker,
            topic=topic,
            partition=partition,
            group_id=group_id,
            client_id=client_id,
        )

    def metric(self, *, ts: int, source: str, metric: str, kind: str) -> MetricSamples:
        """A maker for many samples of one metric and timestamp (the admin collector's offsets)."""
        vocabulary.check_sample(metric, kind, source)
        return MetricSamples(ts=ts, cluster=self.cluster, source=source, collector=self.collector, metric=metric,
                             kind=kind)  # fmt: skip

    def member(self, *, member_id: str | None, host: str | None, **fields: Any) -> MemberSample:
        """As a call of the factory (same keywords), for a sample about the group member that
        owns a partition: it adds the member labels (lagwatch.membership)."""
        return with_member(self(**fields), member_id, host)


@dataclass
class ScrapeResult:
    """One target's scrape: `ok` False means the target did not answer (up = 0).

    `errors` holds per-metric problems (a bad ObjectName, a malformed exporter line) that did
    not fail the whole scrape; they are logged, and the other metrics still count.
    """

    target: str
    ok: bool
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Collector(Protocol):
    """A scrape target. `name` is stable across instances and unique across clusters: it is the
    unit of scale-out. `cluster` names the monitored cluster whose samples it makes."""

    @property
    def name(self) -> str: ...

    @property
    def cluster_name(self) -> str:
        """The cluster stamped on this target's samples (one `SampleFactory` per cluster)."""
        ...

    @property
    def source(self) -> str:
        """Sample source of this target: one of `lagwatch.vocabulary.TARGET_SOURCES`."""
        ...

    @property
    def labels(self) -> dict[str, str | None]:
        """Labels of this target's `up` sample, e.g. {"broker": "1"} or {"client_id": "c1"}."""
        ...

    def collect(self, ts_ms: int, make: SampleFactory) -> ScrapeResult:
        """Scrape once within the configured timeout; never raise for a target problem."""
        ...

    def close(self) -> None: ...
