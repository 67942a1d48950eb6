"""Which client reads the admin cycle's committed offsets (OffsetFetch): Lagwatch's own protocol
client, many groups per request, or librdkafka, one request per group.

Why both: confluent-kafka's `list_consumer_group_offsets` takes one group per call, and
librdkafka's handling of one request per group is most of a large cycle's CPU; the own client
(collectors/kafka_protocol/group_offsets.py) asks each coordinator for hundreds of groups at
once. librdkafka stays the fallback wherever the own client cannot go: a security setting it
refuses (named in the log line), brokers without OffsetFetch v8 (Kafka before 3.0), a broker it
cannot reach while librdkafka can. Each reason is logged once, and again only when it changes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

from collectors.admin.requests import BoundedRequests, GroupOffsets, committed_groups, read_committed_offsets
from collectors.kafka_protocol.connection import ClientSecurity
from collectors.kafka_protocol.group_offsets import GroupOffsetsRead, NotSpoken
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import BrokerError, ProtocolError

log = logging.getLogger(__name__)

#: False sends every group through librdkafka (the bench measures both paths with it).
PROTOCOL_CLIENT = True


class CommittedOffsetReads(Protocol):
    """One cycle's committed offsets: iterate for each group's answer as it arrives, then
    `unfinished` names the groups without one at the deadline."""

    def __iter__(self) -> Iterator[GroupOffsets]: ...

    @property
    def unfinished(self) -> Sequence[str]: ...


@dataclass
class _LibrdkafkaReads:
    requests: BoundedRequests[str]

    def __iter__(self) -> Iterator[GroupOffsets]:
        return committed_groups(self.requests)

    @property
    def unfinished(self) -> Sequence[str]:
        return self.requests.unfinished


@dataclass
class _ProtocolReads:
    read: GroupOffsetsRead

    def __iter__(self) -> Iterator[GroupOffsets]:
        try:
            for group in self.read:
                yield GroupOffsets(group.group_id, group.partitions, group.error)  # type: ignore[arg-type]
        finally:
            self.read.close()

    @property
    def unfinished(self) -> Sequence[str]:
        return self.read.unfinished


class CommittedOffsetReader:
    """The admin collector's OffsetFetch step, kept across cycles (the security settings are
    read once, and a fallback's reason is said once)."""

    def __init__(self, name: str, client_settings: Mapping[str, Any], *, cluster: str) -> None:
        self._name = name
        self._security, self._unsupported = ClientSecurity.or_reason(cluster, client_settings)
        self._said: str | None = None
        #: Each group's coordinator as last found (GroupOffsetsRead.coordinators), for the listed groups.
        self._coordinators: dict[str, tuple[str, int]] = {}

    def read(
        self, admin: AdminClient, metadata: Any, group_ids: list[str], limit: int, deadline: float
    ) -> CommittedOffsetReads:
        """Every group's committed offsets, by the own client where it can, else by librdkafka
        (`limit` requests in flight)."""
        reason, level = self._unsupported, logging.INFO
        if self._security is not None and PROTOCOL_CLIENT and group_ids:
            brokers = [(b.host, b.port) for _, b in sorted(metadata.brokers.items())]
            wanted = set(group_ids)  # deleted groups' coordinators are not kept forever
            self._coordinators = {g: a for g, a in self._coordinators.items() if g in wanted}
            read = GroupOffsetsRead(brokers, group_ids, deadline, self._security, coordinators=self._coordinators)
            try:
                reads = _ProtocolReads(read.open())
                self._say(None, level)
                return reads
            except NotSpoken as exc:
                reason = str(exc)
            except (OSError, ProtocolError, BrokerError, SecurityRefused) as exc:  # OSError: refused, timed out
                reason, level = f"the protocol client reached no broker: {exc}", logging.WARNING
        if reason is not None:
            self._say(reason, level)
        return _LibrdkafkaReads(read_committed_offsets(admin, group_ids, limit, deadline))

    def _say(self, reason: str | None, level: int) -> None:
        """Expected fallbacks (a setting the own client refuses, an old broker) at INFO: nothing is
        lost but CPU; a broker the own client cannot reach at WARNING."""
        if reason == self._said:
            return
        if reason is None:
            log.info("%s: committed offsets by OffsetFetch in batches of groups again", self._name)
        else:
            log.log(
                level, "%s: committed offsets by one OffsetFetch per group (librdkafka), not in batches: %s",
                self._name, reason,
            )  # fmt: skip
        self._said = reason
