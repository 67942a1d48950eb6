"""`[jmx]`: the JMX endpoints scraped (brokers and consumer clients) and how to reach them."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, model_validator

from lagwatch.config.base import StrictModel


class JmxTarget(StrictModel):
    """One JMX endpoint: a broker (``broker`` set) or a consumer client (``client_id`` set)."""

    #: Broker id this endpoint belongs to (the `broker` label): a broker target.
    broker: str | None = None
    #: Client id of the consumer client this endpoint belongs to: a client target.
    client_id: str | None = None
    #: JMX host (backends jpype and jmxquery).
    host: str = "127.0.0.1"
    #: JMX port (backends jpype and jmxquery).
    port: int = Field(9999, ge=1, le=65535)
    #: How the endpoint is read: JMX through jpype or jmxquery, or a Prometheus exporter's text.
    backend: Literal["jpype", "jmxquery", "prometheus"] = "jpype"
    #: For backend = "prometheus": the exporter's /metrics URL.
    url: str | None = None
    #: JMX login user (its password from `password_env`).
    username: str | None = None
    #: Name of the environment variable holding the password (never the password itself).
    password_env: str | None = None
    #: Seconds a scrape of this target may take; unset: `[collect] timeout_s`.
    timeout_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _backend_needs(self) -> JmxTarget:
        if self.backend == "prometheus" and not self.url:
            raise ValueError("backend 'prometheus' needs url = \"http://host:port/metrics\"")
        if self.broker is None and self.client_id is None:
            raise ValueError("set broker (broker JMX) or client_id (consumer-client JMX)")
        return self

    @property
    def name(self) -> str:
        """Stable target name: used for coordination, the `up` sample and logs."""
        who = f"broker-{self.broker}" if self.broker is not None else f"client-{self.client_id}"
        where = self.url if self.backend == "prometheus" else f"{self.host}:{self.port}"
        return f"{who}@{where}"

    def password(self) -> str | None:
        return os.environ.get(self.password_env) if self.password_env else None


class JmxConfig(StrictModel):
    #: JMX endpoints of the one-cluster form (added to `[cluster]`'s); refused beside `[[clusters]]`.
    targets: list[JmxTarget] = Field(default_factory=list)
    #: Path to a JRE's libjvm for the jpype backend; empty: let JPype find it.
    jvm_path: str = ""
