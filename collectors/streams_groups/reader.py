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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from collectors.kafka_protocol.api_versions import api_versions, newest_common_version
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.typed_groups import TypedGroupReader, flexible_requests, read_each_broker
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

    def read_one(connection: BrokerConnection) -> None:
        _read_broker(connection, group_allowed, software_version, read)

    read.errors += read_each_broker(brokers, (CLIENT_ID, deadline, security), read_one, "streams groups")
    return read


def _read_broker(
    connection: BrokerConnection, group_allowed: Callable[[str], bool], software_version: str, read: StreamsGroupsRead
) -> None:
    ask = flexible_requests(connection)
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


class StreamsGroupReader(TypedGroupReader[StreamsGroupsRead]):
    """The admin collector's streams-group step (collectors/kafka_protocol/typed_groups.py). It also
    hands the admin cycle the streams group ids whose offsets to fetch (`group_ids`), without
    making the cycle wait on a slow broker past a bound."""

    kind = "streams groups"
    describe_api = "StreamsGroupDescribe"
    logger = log

    def __init__(
        self, name: str, client_settings: dict[str, Any], group_allowed: Callable[[str], bool], *, cluster: str
    ) -> None:
        super().__init__(name, client_settings, group_allowed, cluster=cluster)
        self._read_done = threading.Event()
        self._group_ids: frozenset[str] = frozenset()

    def begin(self, metadata: Any, deadline: float) -> Callable[[], StreamsGroupsRead]:
        self._read_done.clear()
        return super().begin(metadata, deadline)

    def read(self, metadata: Any, deadline: float) -> StreamsGroupsRead:
        try:
            read = super().read(metadata, deadline)
            self._group_ids = frozenset(read.descriptions)
            return read
        finally:
            self._read_done.set()

    def group_ids(self, wait_s: float) -> frozenset[str]:
        """The streams groups of this cycle's reading, waiting for it up to `wait_s`; the previous
        reading's when it takes longer (a group is in one cycle's offsets late, never missing)."""
        self._read_done.wait(max(wait_s, 0.0))
        return self._group_ids

    def _read_brokers(
        self, brokers: list[tuple[str, int]], deadline: float, security: ClientSecurity
    ) -> StreamsGroupsRead:
        return read_streams_groups(brokers, self._group_allowed, deadline, security=security)

    def _empty(self) -> StreamsGroupsRead:
        return StreamsGroupsRead()

    def _timed_out(self) -> StreamsGroupsRead:
        return StreamsGroupsRead(errors=["streams groups: not read within the timeout"])

    def _unspoken(self, read: StreamsGroupsRead) -> int:
        return read.without_streams_groups
