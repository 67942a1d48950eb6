"""`[jmx]`: the JMX endpoints scraped (brokers and consumer clients) and how to reach them."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, model_validator

from lagwatch.config.base import StrictModel


class JmxTarget(StrictModel):
    """One JMX endpoint: a broker (``broker`` set) or a consumer client (``client_id`` set)."""

    broker: str | None = None
    client_id: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(9999, ge=1, le=65535)
    backend: Literal["jpype", "jmxquery", "prometheus"] = "jpype"
    #: For backend = "prometheus": the exporter's /metrics URL.
    url: str | None = None
    username: str | None = None
    #: Name of the environment variable holding the password (never the password itself).
    password_env: str | None = None
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
    targets: list[JmxTarget] = Field(default_factory=list)
    #: Path to a JRE's libjvm for the jpype backend; empty: let JPype find it.
    jvm_path: str = ""
