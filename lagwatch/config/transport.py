"""`[transport]`: where samples travel between the collectors and the Spark job."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from lagwatch.config.base import StrictModel
from lagwatch.config.secrets import check_client_props


class TransportConfig(StrictModel):
    #: Empty: the first monitored cluster ([cluster], or the first [[clusters]] entry) carries the samples.
    bootstrap_servers: str = ""
    #: The topic the collectors produce samples to and the Spark job reads.
    samples_topic: str = Field("lagwatch.samples", min_length=1)
    #: Partitions of the samples topic when Lagwatch creates it.
    samples_partitions: int = Field(6, ge=1)
    #: Replication factor of the topics Lagwatch creates (samples, collector coordination, alert
    #: leader). Unset: min(3, live brokers). Topics that already exist are left as they are.
    replication_factor: int | None = Field(None, ge=1)
    #: retention.ms of the samples topic: how far back `lagwatch stream` can replay (e.g. a new checkpoint).
    samples_retention_hours: float = Field(168, gt=0)
    #: retention.ms of the coordination and alert-leader topics (they carry no data of their own).
    internal_retention_hours: float = Field(24, gt=0)
    #: librdkafka properties for the transport cluster, used when `bootstrap_servers` is set (else
    #: the first monitored cluster's `client`).
    client: dict[str, Any] = Field(default_factory=dict)
    #: librdkafka producer settings passed through as they are.
    producer: dict[str, Any] = Field(default_factory=dict)

    @field_validator("client", "producer")
    @classmethod
    def _client_props(cls, props: dict[str, Any]) -> dict[str, str]:
        return check_client_props(props)
