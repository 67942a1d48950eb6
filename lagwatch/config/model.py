"""The whole configuration: every section, the two forms of monitored clusters made one list,
and the keys that moved read in their old places.

Why one model: every part (collectors, Spark job, dashboard, alerts) reads the same
`config.toml`, so a typo must be caught in one place and named precisely.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, model_validator

from lagwatch.config.alerts import AlertsConfig
from lagwatch.config.api import ApiConfig
from lagwatch.config.base import StrictModel
from lagwatch.config.cluster import ClusterConfig
from lagwatch.config.collect import CollectConfig
from lagwatch.config.dashboard import DashboardConfig
from lagwatch.config.demo import DemoConfig
from lagwatch.config.jmx import JmxConfig, JmxTarget
from lagwatch.config.lag import LagConfig
from lagwatch.config.lake import LakeConfig
from lagwatch.config.legacy import moved_keys, without_simulated_target
from lagwatch.config.spark import SparkConfig
from lagwatch.config.transport import TransportConfig


class Config(StrictModel):
    #: The one-cluster form. With `[[clusters]]` it is not written; it then names the first entry.
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    #: Every monitored cluster: the `[[clusters]]` entries, or `[cluster]` alone.
    clusters: list[ClusterConfig] = Field(default_factory=list)
    #: Where samples travel between the collectors and the Spark job.
    transport: TransportConfig = Field(default_factory=TransportConfig)
    #: What the admin collector reads, how often, and how its instances share the work.
    collect: CollectConfig = Field(default_factory=CollectConfig)
    #: JMX: the one-cluster form's endpoints, and the JVM the jpype backend loads.
    jmx: JmxConfig = Field(default_factory=JmxConfig)
    #: Where the Parquet lake lives, how long each table keeps rows, and compaction.
    lake: LakeConfig = Field(default_factory=LakeConfig)
    #: The streaming job: its master, Kafka source, batch sizes and outage limits.
    spark: SparkConfig = Field(default_factory=SparkConfig)
    #: The knobs of the lag rules (docs/rollups.md).
    lag: LagConfig = Field(default_factory=LagConfig)
    #: The Streamlit dashboard: where it listens, and who may look and act.
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    #: The alert engine: rules, receivers, grouping and leadership (docs/alerts.md).
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    #: The built-in demo workload (`lagwatch demo`).
    demo: DemoConfig = Field(default_factory=DemoConfig)
    #: The read-only HTTP API (`lagwatch api`, docs/api.md).
    api: ApiConfig = Field(default_factory=ApiConfig)

    #: Where the file was read from; relative paths in the config resolve against its folder.
    source_path: str = Field("", exclude=True)
    _clusters_resolved: bool = PrivateAttr(False)
    #: The embedded broker's address once a command has pointed the config at it.
    _embedded_servers: str = PrivateAttr("")
    _embedded_demo: bool = PrivateAttr(True)

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        """Old spellings of moved keys become the new ones before the sections are validated."""
        return moved_keys(data)

    @model_validator(mode="after")
    def _one_list_of_clusters(self) -> Config:
        """Both forms end as `clusters`, each entry complete, so no reader asks which form was used."""
        if self._clusters_resolved:  # an assignment re-runs model validators
            return self
        self._clusters_resolved = True
        for jmx in (self.jmx, self.cluster.jmx, *(cluster.jmx for cluster in self.clusters)):
            jmx.__dict__["targets"] = without_simulated_target(jmx.targets)
        if not self.clusters:
            self.__dict__["clusters"] = [self.cluster]  # not an assignment: that would re-run this validator
            self.cluster.jmx.targets.extend(self.jmx.targets)
        else:
            check_many_clusters(self)
            self.__dict__["cluster"] = self.clusters[0]
        for cluster in self.clusters:
            cluster.__dict__["groups_allow"] = (
                self.collect.groups_allow if cluster.groups_allow is None else cluster.groups_allow
            )
            cluster.__dict__["groups_deny"] = (
                self.collect.groups_deny if cluster.groups_deny is None else cluster.groups_deny
            )
        return self

    @property
    def embedded_broker(self) -> bool:
        """No servers configured: a Kafka command starts (or shares) the embedded tansu."""
        return not self.cluster.bootstrap_servers

    @property
    def on_embedded_broker(self) -> bool:
        """The home cluster is the embedded tansu, before or after a command filled in its address:
        the one cluster Lagwatch may write demo traffic to. A configured cluster is only watched."""
        return self.embedded_broker or self.cluster.bootstrap_servers == self._embedded_servers

    def use_embedded_servers(self, bootstrap_servers: str, with_demo: bool = True) -> None:
        """Point the home cluster at a running embedded broker, remembering that it is one (and
        whether the demo, with its simulated JMX, runs there)."""
        self._embedded_servers = bootstrap_servers
        self._embedded_demo = with_demo
        self.cluster.bootstrap_servers = bootstrap_servers

    def jmx_targets(self, cluster: ClusterConfig) -> list[JmxTarget]:
        """The JMX targets scraped for `cluster`: its own, and on the embedded broker running the
        demo the demo's simulated one (tansu has no JMX), never scraped beside a configured cluster."""
        if cluster.name == self.cluster.name and self.on_embedded_broker and self._embedded_demo:
            return [*cluster.jmx.targets, self.demo.simulated_target()]
        return list(cluster.jmx.targets)

    @property
    def alert_leader_topic(self) -> str:
        """The alert engines' leader topic (and group): `alerts.leader_topic`, else one per home cluster."""
        return self.alerts.leader_topic or f"lagwatch.alerts.leader.{self.cluster.name}"

    def cluster_named(self, name: str) -> ClusterConfig:
        """The monitored cluster called `name`; a KeyError names the ones there are."""
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise KeyError(f"no cluster {name!r} in the config (clusters: {', '.join(c.name for c in self.clusters)})")

    def transport_servers(self) -> str:
        return self.transport.bootstrap_servers or self.cluster.bootstrap_servers

    def resolve_path(self, path: str) -> Path:
        """Resolve a configured path against the config file's folder, so cwd never matters."""
        candidate = Path(path)
        if candidate.is_absolute() or not self.source_path:
            return candidate
        return Path(self.source_path).resolve().parent / candidate


def check_many_clusters(config: Config) -> None:
    """`[[clusters]]` rules: names unique, servers set, and no one-cluster keys beside it."""
    if "cluster" in config.model_fields_set:
        raise ValueError("[cluster] and [[clusters]] both set: use [cluster] for one cluster or [[clusters]] for many")
    if config.jmx.targets:
        raise ValueError("jmx.targets: with [[clusters]], list each cluster's targets under [[clusters.jmx.targets]]")
    seen: set[str] = set()
    for cluster in config.clusters:
        if cluster.name in seen:
            raise ValueError(f"clusters: the name {cluster.name!r} is used twice; each cluster needs its own name")
        seen.add(cluster.name)
        if not cluster.bootstrap_servers:
            raise ValueError(f"clusters {cluster.name!r}: bootstrap_servers is required with [[clusters]]")
