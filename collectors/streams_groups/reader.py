"""Reads the cluster's streams groups (KIP-1071) once per admin cycle, over the Kafka protocol.

Neither librdkafka nor confluent-kafka lists or describes a streams group (ListGroups' "streams"
type filter, StreamsGroupDescribe), so Lagwatch asks each broker itself, as it does for share
groups: per broker one connection and three requests (ApiVersions, ListGroups typed "streams",
StreamsGroupDescribe for its allowed groups), all within the admin cycle's deadline and secured
(TLS, SASL) as the cluster's client settings say. The broker that lists a group coordinates it,
so no FindCoordinator round trip. A streams group commits its offsets like any group: the admin
collector reads them (commit log or OffsetFetch) and takes the group ids found here. A broker
without streams groups (Kafka 3.x) has none to read; a broker that fails is a per-metric error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from collectors.cycle_step import CycleStep
from collectors.kafka_protocol.api_versions import api_versions, newest_common_version
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError, Reader
from collectors.streams_groups import requests as messages

log = logging.getLogger(__name__)

CLIENT_ID = "lagwatch-streams-groups"


@dataclass
class StreamsGroupsRead:
    """One cycle's reading: each allowed streams group's description, and what failed."""

    descriptions: dict[str, messages.StreamsGroupDescription] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: Brokers that do not speak StreamsGroupDescribe (none to read there).
    without_streams_groups: int = 0


def read_streams_groups(
    brokers: Iterable[tuple[str, int]],
    group_allowed: Callable[[str], bool],
    deadline: float,
    software_version: str = "0",
    security: ClientSecurity = PLAINTEXT,
) -> StreamsGroupsRead:
    """Every broker's streams groups (those `group_allowed` passes), described."""
    read = StreamsGroupsRead()
    for host, port in brokers:
        try:
            with BrokerConnection(host, port, CLIENT_ID, deadline, security) as connection:
                _read_broker(connection, group_allowed, software_version, read)
        except (OSError, ProtocolError, BrokerError, SecurityRefused) as exc:  # OSError: refused, reset, timed out
            read.errors.append(f"streams groups on {host}:{port}: {exc}")
    return read


def _read_broker(
    connection: BrokerConnection, group_allowed: Callable[[str], bool], software_version: str, read: StreamsGroupsRead
) -> None:
    def ask(key: int, version: int, body: bytes) -> Reader:
        return connection.request(key, version, body, flexible=True)  # every version sent here is flexible

    m = messages
    if not _speaks_streams_groups(api_versions(connection, software_version)):
        read.without_streams_groups += 1
        return
    listed = m.decode_list_groups(
        ask(m.LIST_GROUPS, m.LIST_GROUPS_VERSION, m.encode_list_groups([m.STREAMS_GROUP_TYPE]))
    )
    group_ids = sorted(g.group_id for g in listed if g.group_type == m.STREAMS_GROUP_TYPE and group_allowed(g.group_id))
    if not group_ids:
        return
    described = m.decode_streams_group_describe(
        ask(m.STREAMS_GROUP_DESCRIBE, m.STREAMS_GROUP_DESCRIBE_VERSION, m.encode_streams_group_describe(group_ids))
    )
    read.descriptions.update((d.group_id, d) for d in described)


def _speaks_streams_groups(versions: dict[int, tuple[int, int]]) -> bool:
    m = messages
    needed = ((m.LIST_GROUPS, m.LIST_GROUPS_VERSION), (m.STREAMS_GROUP_DESCRIBE, m.STREAMS_GROUP_DESCRIBE_VERSION))
    return all(newest_common_version(versions, key, (version,)) is not None for key, version in needed)


class StreamsGroupReader:
    """The admin collector's streams-group step: runs beside the rest of the cycle (its own thread),
    and says once why it cannot read instead of every cycle. It also hands the admin cycle the
    streams group ids whose offsets to fetch (`group_ids`), without making the cycle wait on a
    slow broker past a bound."""

    def __init__(
        self, name: str, client_settings: dict[str, Any], group_allowed: Callable[[str], bool], *, cluster: str
    ) -> None:
        self._name = name
        self._group_allowed = group_allowed
        self._security, self._unsupported = ClientSecurity.or_reason(cluster, client_settings)
        self._step: CycleStep[StreamsGroupsRead] = CycleStep(name, "streams-groups", log)
        self._read_done = threading.Event()
        self._group_ids: frozenset[str] = frozenset()

    def close(self) -> None:
        self._step.close()

    def begin(self, metadata: Any, deadline: float) -> Callable[[], StreamsGroupsRead]:
        """Start this cycle's reading; the returned call waits for it (until the deadline)."""
        self._read_done.clear()

        def read() -> StreamsGroupsRead:
            try:
                return self.read(metadata, deadline)
            finally:
                self._read_done.set()

        return self._step.begin(read, deadline, _timed_out)

    def group_ids(self, wait_s: float) -> frozenset[str]:
        """The streams groups of this cycle's reading, waiting for it up to `wait_s`; the previous
        reading's when it takes longer (a group is in one cycle's offsets late, never missing)."""
        self._read_done.wait(max(wait_s, 0.0))
        return self._group_ids

    def read(self, metadata: Any, deadline: float) -> StreamsGroupsRead:
        """This cycle's streams groups, from the brokers the cycle's cluster metadata names."""
        if self._security is None:
            self._step.say(f"streams groups not read: {self._unsupported}")
            return StreamsGroupsRead()
        brokers = [(b.host, b.port) for _, b in sorted(metadata.brokers.items())]
        started = time.monotonic()
        read = read_streams_groups(brokers, self._group_allowed, deadline, security=self._security)
        self._group_ids = frozenset(read.descriptions)
        if brokers and read.without_streams_groups == len(brokers):
            self._step.say("streams groups not read: the brokers do not speak StreamsGroupDescribe (no streams groups)")
        else:
            self._step.reading_again()
        log.debug("%s: %d streams groups in %.3f s", self._name, len(read.descriptions), time.monotonic() - started)
        return read


def _timed_out() -> StreamsGroupsRead:
    return StreamsGroupsRead(errors=["streams groups: not read within the timeout"])
