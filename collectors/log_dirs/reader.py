"""Each size-limited partition's size on disk, read once per admin cycle with DescribeLogDirs.

Only topics with a size limit (`retention.bytes` ≥ 0 under a delete policy) are asked for, so a
cluster without size limits pays nothing: no connection, no request. Each partition's size is
its leader's replica (the log consumers read and retention trims first), so each broker is
asked only for the partitions it leads: one connection and two requests per such broker
(ApiVersions, then DescribeLogDirs at the newest version both sides speak), within the admin
cycle's deadline, in a thread of its own beside the rest of the cycle.

Connections are secured (TLS, SASL) as the cluster's client settings say. What stops the
reading for good on a cluster (a security setting the reader's client cannot use, brokers
without DescribeLogDirs v2+, a principal without Describe on the Cluster resource) is
said once in the log, not every cycle; a broker that fails otherwise (refused, reset, a log dir
offline) is a per-metric error of the cycle, as a failed ListOffsets is. The retention margin's
size limit needs the size (spark_jobs/lag/retention.py); without it the reason says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.cycle_step import CycleStep
from collectors.kafka_protocol.api_versions import api_versions, newest_common_version
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError, error_name
from collectors.log_dirs import requests

log = logging.getLogger(__name__)

CLIENT_ID = "lagwatch-log-dirs"
#: The top-level error of a principal without Describe on the Cluster resource.
CLUSTER_AUTHORIZATION_FAILED = 31
Partition = tuple[str, int]


@dataclass
class PartitionSizes:
    """One cycle's reading: each partition's size (its leader's replica) and what failed."""

    sizes: dict[Partition, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: Why a broker could not be read at all, in words the operator can act on (said once).
    unreadable: str | None = None


def leaders_of(metadata: Any, topics: Collection[str]) -> dict[int, list[Partition]]:
    """Broker id → the partitions of `topics` it leads (a partition without a leader is left out)."""
    leads: dict[int, list[Partition]] = {}
    for topic in sorted(topics):
        topic_meta = metadata.topics.get(topic)
        for number, partition in sorted(topic_meta.partitions.items()) if topic_meta is not None else ():
            if partition.leader >= 0:
                leads.setdefault(partition.leader, []).append((topic, number))
    return leads


def read_partition_sizes(
    brokers: Mapping[int, tuple[str, int]],
    leads: Mapping[int, list[Partition]],
    deadline: float,
    software_version: str = "0",
    security: ClientSecurity = PLAINTEXT,
) -> PartitionSizes:
    """Each led partition's size, asked of its leader (`brokers`: id → host and port)."""
    read = PartitionSizes()
    for broker_id, partitions in sorted(leads.items()):
        address = brokers.get(broker_id)
        if address is None:
            read.errors.append(f"partition sizes: leader {broker_id} is not in the cluster metadata")
            continue
        host, port = address
        try:
            with BrokerConnection(host, port, CLIENT_ID, deadline, security) as connection:
                _read_broker(connection, partitions, software_version, read)
        except BrokerError as exc:
            if exc.code != CLUSTER_AUTHORIZATION_FAILED:
                read.errors.append(f"partition sizes on {host}:{port}: {exc}")
                continue
            read.unreadable = (
                f"DescribeLogDirs refused ({error_name(exc.code)}): grant Describe on the Cluster resource "
                "to this principal for the retention margin's size limit"
            )
        except (OSError, ProtocolError, SecurityRefused) as exc:  # OSError: refused, reset, timed out
            read.errors.append(f"partition sizes on {host}:{port}: {exc}")
    return read


def _read_broker(
    connection: BrokerConnection, partitions: list[Partition], software_version: str, read: PartitionSizes
) -> None:
    versions = api_versions(connection, software_version)
    version = newest_common_version(versions, requests.DESCRIBE_LOG_DIRS, requests.LOG_DIRS_VERSIONS)
    if version is None:
        read.unreadable = f"{connection.address} does not speak DescribeLogDirs v{requests.LOG_DIRS_VERSIONS[0]}+"
        return
    wanted: dict[str, list[int]] = {}
    for topic, number in partitions:
        wanted.setdefault(topic, []).append(number)
    body = requests.encode_describe_log_dirs(wanted)
    log_dirs = requests.decode_describe_log_dirs(
        connection.request(requests.DESCRIBE_LOG_DIRS, version, body, flexible=True), version
    )
    led = set(partitions)
    for log_dir in log_dirs:
        if log_dir.error_code:
            read.errors.append(f"log dir {log_dir.path} on {connection.address}: {error_name(log_dir.error_code)}")
        for replica in log_dir.replicas:
            where = (replica.topic, replica.partition)
            if not replica.is_future and where in led:
                read.sizes[where] = replica.size_bytes


class LogDirReader:
    """The admin collector's partition-size step: runs beside the rest of the cycle (its own
    thread) and says once why it cannot read, instead of every cycle."""

    def __init__(self, name: str, client_settings: Mapping[str, Any], *, cluster: str) -> None:
        self._security, self._unsupported = ClientSecurity.or_reason(cluster, client_settings)
        self._step: CycleStep[PartitionSizes] = CycleStep(name, "log-dirs", log, logging.WARNING)

    def close(self) -> None:
        self._step.close()

    def begin(self, metadata: Any, topics: Collection[str], deadline: float) -> Callable[[], PartitionSizes]:
        """Start reading the sizes of `topics`' partitions; the returned call waits for them (until the deadline)."""
        if not topics:
            return PartitionSizes  # nothing size-limited: no connection at all
        return self._step.begin(lambda: self.read(metadata, topics, deadline), deadline, _timed_out)

    def read(self, metadata: Any, topics: Collection[str], deadline: float) -> PartitionSizes:
        if self._security is None:
            self._step.say(f"partition sizes not read: {self._unsupported}; no size limit in the retention margin")
            return PartitionSizes()
        brokers = {broker_id: (b.host, b.port) for broker_id, b in metadata.brokers.items()}
        read = read_partition_sizes(brokers, leaders_of(metadata, topics), deadline, security=self._security)
        if read.unreadable is not None:
            self._step.say(f"partition sizes not read: {read.unreadable}")
        elif read.sizes:
            self._step.reading_again()
        return read


def _timed_out() -> PartitionSizes:
    return PartitionSizes(errors=["partition sizes: not read within the timeout"])
