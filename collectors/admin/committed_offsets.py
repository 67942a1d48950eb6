"""Which client reads the admin cycle's committed offsets (OffsetFetch): Lagwatch's own protocol
client, many groups per request, or librdkafka, one request per group.

Why both: confluent-kafka's `list_consumer_group_offsets` takes one group per call, and
librdkafka's handling of one request per group is most of a large cycle's CPU; the own client
(collectors/kafka_protocol/group_offsets.py) asks each coordinator for hundreds of groups at
once. librdkafka stays the fallback wherever the own client cannot go (:mod:`collectors.admin.protocol_choice`):
a security setting it refuses, brokers without OffsetFetch v8 (Kafka before 3.0), a broker it
cannot reach while librdkafka can.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka.admin import AdminClient

from collectors.admin.protocol_choice import ProtocolChoice
from collectors.admin.requests import BoundedRequests, GroupOffsets, committed_groups, read_committed_offsets
from collectors.kafka_protocol.connection import ClientSecurity
from collectors.kafka_protocol.group_offsets import GroupOffsetsRead

log = logging.getLogger(__name__)


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


@dataclass
class _Unanswered:
    """The cycle's deadline came before any group could be asked: every group is unfinished."""

    group_ids: list[str]

    def __iter__(self) -> Iterator[GroupOffsets]:
        return iter(())

    @property
    def unfinished(self) -> Sequence[str]:
        return self.group_ids


class CommittedOffsetReader:
    """The admin collector's OffsetFetch step, kept across cycles (the client's choice and each
    group's coordinator)."""

    def __init__(self, name: str, security: tuple[ClientSecurity | None, str | None]) -> None:
        self._choice = ProtocolChoice(
            name,
            security,
            batched="committed offsets by OffsetFetch in batches of groups",
            per_group="committed offsets by one OffsetFetch per group",
        )
        #: Each group's coordinator as last found (GroupOffsetsRead.coordinators), for the listed groups.
        self._coordinators: dict[str, tuple[str, int]] = {}

    def read(
        self, admin: AdminClient, metadata: Any, group_ids: list[str], limit: int, deadline: float
    ) -> CommittedOffsetReads:
        """Every group's committed offsets, by the own client where it can, else by librdkafka
        (`limit` requests in flight)."""
        if group_ids:
            brokers = [(b.host, b.port) for _, b in sorted(metadata.brokers.items())]
            wanted = set(group_ids)  # deleted groups' coordinators are not kept forever
            self._coordinators = {g: a for g, a in self._coordinators.items() if g in wanted}

            def batched(security: ClientSecurity) -> CommittedOffsetReads:
                read = GroupOffsetsRead(brokers, group_ids, deadline, security, coordinators=self._coordinators)
                return _ProtocolReads(read.open())

            try:
                reads = self._choice.attempt(batched)
            except TimeoutError:
                return _Unanswered(group_ids)
            if reads is not None:
                return reads
        return _LibrdkafkaReads(read_committed_offsets(admin, group_ids, limit, deadline))
