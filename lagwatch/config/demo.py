"""`[demo]`: the built-in demo workload (`lagwatch demo`) and its simulated broker JMX.

The demo writes (it creates topics and commits offsets as consumer groups), so it runs only on
the embedded broker: a monitor must never write into a cluster it watches. Its simulated JMX
target belongs to it for the same reason: it is scraped only when the home cluster is the
embedded broker (`Config.jmx_targets`), never beside a configured cluster.
"""

from __future__ import annotations

from pydantic import Field

from lagwatch.config.base import StrictModel
from lagwatch.config.jmx import JmxTarget

#: The broker id the demo's JMX simulator reports under, so nobody mistakes it for a real broker
#: (the dashboard labels brokers named `sim-…` as simulated).
SIMULATED_BROKER = "sim-1"


class DemoConfig(StrictModel):
    #: Records per second across the demo topics.
    rate: float = Field(50, gt=0)
    #: Port of the demo's simulated broker-JMX exporter (Prometheus text, broker "sim-1"); the
    #: collectors scrape it on the embedded broker only.
    jmx_sim_port: int = Field(7071, ge=1, le=65535)

    def simulated_target(self) -> JmxTarget:
        """The JMX target of the demo's simulator: tansu has no JMX of its own, so on the embedded
        broker this stands in for it."""
        return JmxTarget(
            broker=SIMULATED_BROKER, backend="prometheus", url=f"http://127.0.0.1:{self.jmx_sim_port}/metrics"
        )
