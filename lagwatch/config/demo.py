"""`[demo]`: the built-in demo workload (`lagwatch demo`)."""

from __future__ import annotations

from pydantic import Field

from lagwatch.config.base import StrictModel


class DemoConfig(StrictModel):
    #: Records per second across the demo topics.
    rate: float = Field(50, gt=0)
    #: Port of the demo's simulated broker-JMX exporter (Prometheus text, broker "sim-1").
    jmx_sim_port: int = Field(7071, ge=1, le=65535)
