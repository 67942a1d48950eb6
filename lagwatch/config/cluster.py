"""`[cluster]` / `[[clusters]]`: one monitored Kafka cluster, its client settings and overrides."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from lagwatch.config.base import StrictModel, check_threshold_keys, compiled_regexes
from lagwatch.config.jmx import JmxTarget
from lagwatch.config.secrets import check_client_props


class ClusterJmx(StrictModel):
    """A cluster's own JMX endpoints ([[clusters.jmx.targets]] or [[cluster.jmx.targets]])."""

    #: JMX endpoints of this cluster's brokers and consumer clients.
    targets: list[JmxTarget] = Field(default_factory=list)


class ClusterConfig(StrictModel):
    """One monitored cluster: `[cluster]` (the one-cluster form) or an entry of `[[clusters]]`."""

    #: Names the cluster in every sample, table and alert (the `cluster` label); unique among `[[clusters]]`.
    name: str = Field("local", min_length=1)
    #: Empty: start the embedded tansu broker on a free loopback port (the one-cluster form only).
    bootstrap_servers: str = ""
    #: librdkafka properties passed through as they are (security.protocol, sasl.mechanism,
    #: ssl.ca.location, …). Secrets come from the environment (`named_cluster_env_var`).
    client: dict[str, Any] = Field(default_factory=dict)
    #: This cluster's JMX targets; in the one-cluster form `[[jmx.targets]]` adds to them.
    jmx: ClusterJmx = Field(default_factory=ClusterJmx)
    #: Unset: `[collect] groups_allow` / `groups_deny` (filled in when the config loads).
    groups_allow: list[str] | None = None
    #: Unset: `[collect] groups_deny`.
    groups_deny: list[str] | None = None
    #: Thresholds for every group of this cluster (keys as in `[lag.group_thresholds]`, which
    #: still wins for the groups it names).
    lag: dict[str, float] = Field(default_factory=dict)

    @field_validator("client")
    @classmethod
    def _client_props(cls, props: dict[str, Any]) -> dict[str, str]:
        return check_client_props(props)

    @field_validator("groups_allow", "groups_deny")
    @classmethod
    def _regexes_compile(cls, patterns: list[str] | None) -> list[str] | None:
        return None if patterns is None else compiled_regexes(patterns)

    @model_validator(mode="after")
    def _known_lag_keys(self) -> ClusterConfig:
        check_threshold_keys(self.lag, "lag")
        return self
