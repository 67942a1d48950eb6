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
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from collectors.cycle_step import CycleStep
from collectors.kafka_protocol.api_versions import api_versions, newest_common_version
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError, Reader
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
    for host, port in brokers:
        try:
            with BrokerConnection(host, port, CLIENT_ID, deadline, security) as connection:
                _read_broker(connection, group_allowed, software_version, read)
        except (OSError, ProtocolError, BrokerError, SecurityRefused) as exc:  # OSError: refused, reset, timed out
            read.errors.append(f"share groups on {host}:{port}: {exc}")
    return read


def _read_broker(
    connection: BrokerConnection, group_allowed: Callable[[str], bool], software_version: str, read: ShareGroupsRead
) -> None:
    def ask(key: int, version: int, body: bytes) -> Reader:
        return connection.request(key, version, body, flexible=True)  # every version sent here is flexible

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


class ShareGroupReader:
    """The admin collector's share-group step: runs beside the rest of the cycle (its own thread,
    so the cycle's other steps do not eat its time), and says once why it cannot read (a security
    setting its client cannot use, no share groups on the cluster) instead of every cycle."""

    def __init__(
        self, name: str, client_settings: dict[str, Any], group_allowed: Callable[[str], bool], *, cluster: str
    ) -> None:
        self._name = name
        self._group_allowed = group_allowed
        self._security, self._unsupported = ClientSecurity.or_reason(cluster, client_settings)
        self._step: CycleStep[ShareGroupsRead] = CycleStep(name, "share-groups", log)

    def close(self) -> None:
        self._step.close()

    def begin(self, metadata: Any, deadline: float) -> Callable[[], ShareGroupsRead]:
        """Start this cycle's reading; the returned call waits for it (until the deadline)."""
        return self._step.begin(lambda: self.read(metadata, deadline), deadline, _timed_out)

    def read(self, metadata: Any, deadline: float) -> ShareGroupsRead:
        """This cycle's share groups, from the brokers the cycle's cluster metadata names."""
        if self._security is None:
            self._step.say(f"share groups not read: {self._unsupported}")
            return ShareGroupsRead()
        brokers = [(b.host, b.port) for _, b in sorted(metadata.brokers.items())]
        started = time.monotonic()
        read = read_share_groups(brokers, self._group_allowed, deadline, security=self._security)
        if brokers and read.without_share_groups == len(brokers):
            self._step.say("share groups not read: the brokers do not speak ShareGroupDescribe (no share groups)")
        else:
            self._step.reading_again()
        log.debug("%s: %d share groups in %.3f s", self._name, len(read.descriptions), time.monotonic() - started)
        return read


def _timed_out() -> ShareGroupsRead:
    return ShareGroupsRead(errors=["share groups: not read within the timeout"])
