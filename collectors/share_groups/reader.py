"""Reads the cluster's share groups (KIP-932) once per admin cycle, over the Kafka protocol.

Each broker answers ListGroups for the groups it coordinates, so the broker that lists a share
group is the one to ask for its description and offsets: no FindCoordinator round trip. Per
broker, one connection and four requests (ApiVersions, ListGroups typed "share",
ShareGroupDescribe and DescribeShareGroupOffsets for its allowed groups), all within the
admin cycle's deadline, secured (TLS, SASL) as the cluster's client settings say. A broker that
does not speak the share-group requests (Kafka 3.x, a 4.x cluster without share.version) has
none to read; a broker that fails (refused, reset, a failed login) is a per-metric error of
the cycle, as a failed OffsetFetch is. Why the protocol and not a client: docs/share-groups.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from collectors.kafka_protocol.api_versions import api_versions, newest_common_version
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.typed_groups import TypedGroupReader, flexible_requests, read_each_broker
from collectors.share_groups import requests as messages

log = logging.getLogger(__name__)

CLIENT_ID = "lagwatch-share-groups"


@dataclass
class ShareGroupsRead:
    """One cycle's reading: each allowed share group's description and offsets, and what failed."""

    descriptions: dict[str, messages.ShareGroupDescription] = field(default_factory=dict)
    offsets: dict[str, messages.ShareGroupOffsets] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: Brokers that do not speak the share-group requests (none to read there).
    without_share_groups: int = 0


def read_share_groups(
    brokers: Iterable[tuple[str, int]],
    group_allowed: Callable[[str], bool],
    deadline: float,
    software_version: str = "0",
    security: ClientSecurity = PLAINTEXT,
) -> ShareGroupsRead:
    """Every broker's share groups (those `group_allowed` passes), described with their offsets."""
    read = ShareGroupsRead()

    def read_one(connection: BrokerConnection) -> None:
        _read_broker(connection, group_allowed, software_version, read)

    read.errors += read_each_broker(brokers, (CLIENT_ID, deadline, security), read_one, "share groups")
    return read


def _read_broker(
    connection: BrokerConnection, group_allowed: Callable[[str], bool], software_version: str, read: ShareGroupsRead
) -> None:
    ask = flexible_requests(connection)
    m = messages
    offsets_version = _usable_offsets_version(api_versions(connection, software_version))
    if offsets_version is None:
        read.without_share_groups += 1
        return
    listed = m.decode_list_groups(ask(m.LIST_GROUPS, m.LIST_GROUPS_VERSION, m.encode_list_groups([m.SHARE_GROUP_TYPE])))
    group_ids = sorted(g.group_id for g in listed if g.group_type == m.SHARE_GROUP_TYPE and group_allowed(g.group_id))
    if not group_ids:
        return
    described = m.decode_share_group_describe(
        ask(m.SHARE_GROUP_DESCRIBE, m.SHARE_GROUP_DESCRIBE_VERSION, m.encode_share_group_describe(group_ids))
    )
    offsets = m.decode_describe_share_group_offsets(
        ask(m.DESCRIBE_SHARE_GROUP_OFFSETS, offsets_version, m.encode_describe_share_group_offsets(group_ids)),
        offsets_version,
    )
    read.descriptions.update((d.group_id, d) for d in described)
    read.offsets.update((g.group_id, g) for g in offsets)


def _usable_offsets_version(versions: dict[int, tuple[int, int]]) -> int | None:
    """The DescribeShareGroupOffsets version to send (the newest both sides speak), or None when
    the broker lacks one of the requests the reading needs."""
    m = messages
    needed = ((m.LIST_GROUPS, m.LIST_GROUPS_VERSION), (m.SHARE_GROUP_DESCRIBE, m.SHARE_GROUP_DESCRIBE_VERSION))
    if any(newest_common_version(versions, key, (version,)) is None for key, version in needed):
        return None
    return newest_common_version(versions, m.DESCRIBE_SHARE_GROUP_OFFSETS, m.OFFSETS_VERSIONS)


class ShareGroupReader(TypedGroupReader[ShareGroupsRead]):
    """The admin collector's share-group step (collectors/kafka_protocol/typed_groups.py)."""

    kind = "share groups"
    describe_api = "ShareGroupDescribe"
    logger = log

    def _read_brokers(
        self, brokers: list[tuple[str, int]], deadline: float, security: ClientSecurity
    ) -> ShareGroupsRead:
        return read_share_groups(brokers, self._group_allowed, deadline, security=security)

    def _empty(self) -> ShareGroupsRead:
        return ShareGroupsRead()

    def _timed_out(self) -> ShareGroupsRead:
        return ShareGroupsRead(errors=["share groups: not read within the timeout"])

    def _unspoken(self, read: ShareGroupsRead) -> int:
        return read.without_share_groups
