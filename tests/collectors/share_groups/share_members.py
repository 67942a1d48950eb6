"""A real share-group member (confluent-kafka's ShareConsumer, KIP-932) for tests, and the broker's
own ShareGroupCommand as the reference reading.

The group starts at the earliest offset (group config share.auto.offset.reset, set on the GROUP
resource) and acknowledges explicitly, so a test knows exactly which records are acknowledged:
the first `count` offsets of a one-partition topic are accepted, every other record it was
handed is released (not acknowledged: it stays in the share lag).
"""

from __future__ import annotations

import glob
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

ACKNOWLEDGE_TIMEOUT_S = 30.0


def start_at_earliest(bootstrap: str, group_id: str, client: Mapping[str, str] | None = None) -> None:
    """Group config share.auto.offset.reset=earliest (the default, latest, would skip what was produced)."""
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    admin = AdminClient({**(client or {}), "bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group_id,
                                                                  incremental_configs=[entry])]).values():  # fmt: skip
        future.result()


class ShareMember:
    """One share consumer subscribed to `topic`; it acknowledges only when told to (`client`:
    security settings for a secured broker)."""

    def __init__(
        self, bootstrap: str, group_id: str, topic: str, client_id: str, client: Mapping[str, str] | None = None
    ) -> None:
        start_at_earliest(bootstrap, group_id, client)
        self.client_id = client_id
        self._consumer = ShareConsumer(
            {
                **(client or {}),
                "bootstrap.servers": bootstrap,
                "group.id": group_id,
                "client.id": client_id,
                "share.acknowledgement.mode": "explicit",
            }
        )
        self._consumer.subscribe([topic])
        self._closed = False

    def acknowledge_first(self, count: int) -> None:
        """Accept offsets 0..count-1 (one partition), release everything else it is handed, commit."""
        accepted, deadline = 0, time.monotonic() + ACKNOWLEDGE_TIMEOUT_S
        while accepted < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.client_id}: {accepted} of {count} records acknowledged")
            for message in self._consumer.poll(1.0):
                if message.error() is None and message.offset() == accepted and accepted < count:
                    self._consumer.acknowledge(message)
                    accepted += 1
                else:
                    self._consumer.acknowledge(message, AcknowledgeType.RELEASE)
            self._consumer.commit_sync()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._consumer.close()


def share_group_command(
    kafka_home: Path, bootstrap: str, group_id: str, command_config: Path | None = None
) -> dict[tuple[str, int], tuple[int, int]]:
    """ShareGroupCommand --describe: (topic, partition) → (start offset, lag), as the broker's tool prints them
    (`command_config`: the tool's client properties, for a secured broker)."""
    classpath = ":".join(sorted(glob.glob(str(kafka_home / "libs" / "*.jar"))))
    command = [
        "java", "-cp", classpath, f"-Dlog4j2.configurationFile={kafka_home / 'config' / 'tools-log4j2.yaml'}",
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        "--bootstrap-server", bootstrap, "--describe", "--group", group_id,
        *(["--command-config", str(command_config)] if command_config else []),
    ]  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    rows: dict[tuple[str, int], tuple[int, int]] = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[0] == group_id:
            rows[(fields[1], int(fields[2]))] = (int(fields[3]), int(fields[4]))
    return rows
