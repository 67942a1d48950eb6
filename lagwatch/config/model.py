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
from lagwatch.config.jmx import JmxConfig
from lagwatch.config.lag import LagConfig
from lagwatch.config.lake import LakeConfig
from lagwatch.config.legacy import moved_keys
from lagwatch.config.spark import SparkConfig
from lagwatch.config.transport import TransportConfig


class Config(StrictModel):
    #: The one-cluster form. With `[[clusters]]` it is not written; it then names the first entry.
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    #: Every monitored cluster: the `[[clusters]]` entries, or `[cluster]` alone.
    clusters: list[ClusterConfig] = Field(default_factory=list)
    transport: TransportConfig = Field(default_factory=TransportConfig)
    collect: CollectConfig = Field(default_factory=CollectConfig)
    jmx: JmxConfig = Field(default_factory=JmxConfig)
    lake: LakeConfig = Field(default_factory=LakeConfig)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    lag: LagConfig = Field(default_factory=LagConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    demo: DemoConfig = Field(default_factory=DemoConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)

    #: Where the file was read from; relative paths in the config resolve against its folder.
    source_path: str = Field("", exclude=True)
    _clusters_resolved: bool = PrivateAttr(False)

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
        return not self.cluster.bootstrap_servers

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
