"""`lagwatch up` against a real Kafka broker in a scratch folder, for the soak.

The config is the shipped one with the parts a production deployment changes: `[cluster]`
points at the real broker (so `up` starts no embedded broker and no demo: a configured cluster
is only watched; the demo's groups run in the soak's own workload, bench/soak/workload.py), the
broker's own JMX is read through jpype, the collector runs every 5 s, and every port is a free one.
"""

from __future__ import annotations

from pathlib import Path

from harness.local_stack import LocalStack
from shell.broker import free_port

COLLECT_INTERVAL_S = 5.0


def soak_config(bootstrap: str, jmx_port: int, interval_s: float = COLLECT_INTERVAL_S) -> str:
    """The config.toml of the soak run (the shipped defaults wherever it says nothing)."""
    return f"""\
[cluster]
name = "soak"
bootstrap_servers = "{bootstrap}"

[transport]
samples_topic = "lagwatch.samples"

[collect]
interval_s = {interval_s:g}

[[jmx.targets]]
broker = "1"
host = "127.0.0.1"
port = {jmx_port}
backend = "jpype"

[lake]
path = "lake"

[spark]
master = "local[2]"
trigger_s = 2
checkpoint_dir = "state/checkpoints"

[dashboard]
port = {free_port()}

[api]
port = {free_port()}
"""


class SoakStack(LocalStack):
    """LocalStack (process marker, logs, clean-up) with the soak's config instead of the shipped one."""

    def __init__(self, work_dir: Path, bootstrap: str, jmx_port: int) -> None:
        super().__init__(work_dir)
        self.bootstrap = bootstrap
        self.jmx_port = jmx_port

    def write_config(self) -> Path:
        path = self.work_dir / "config.toml"
        path.write_text(soak_config(self.bootstrap, self.jmx_port))
        return path
