"""Which client describes the admin cycle's groups (state, members, their partitions): Lagwatch's
own protocol client, many groups per request, or librdkafka, requests of its own per group.

Why both: librdkafka's coordinator lookup and describe per group are most of what describing
costs a large cycle; the own client (collectors/kafka_protocol/group_descriptions.py) asks each
coordinator for hundreds of groups at once and answers with the attributes the samples read of
confluent-kafka's descriptions, with the same state and type codes. librdkafka stays the fallback
wherever the own client cannot go, as for the committed offsets (:mod:`collectors.admin.protocol_choice`):
a security setting it refuses, brokers without FindCoordinator v4 / DescribeGroups v5 (Kafka before
3.0), a broker it cannot reach.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka.admin import AdminClient

from collectors.admin.protocol_choice import ProtocolChoice
from collectors.admin.requests import KeyedReads, describe_groups
from collectors.kafka_protocol.connection import ClientSecurity
from collectors.kafka_protocol.group_descriptions import Remembered, read_group_descriptions

log = logging.getLogger(__name__)


class GroupDescriber:
    """The admin collector's describe step, kept across cycles (the client's choice and the own
    client's memory of each group's coordinator and request)."""

    def __init__(self, name: str, security: tuple[ClientSecurity | None, str | None]) -> None:
        self._choice = ProtocolChoice(
            name,
            security,
            batched="groups described in batches of groups",
            per_group="groups described by requests per group",
        )
        #: The own client's memory of the groups across cycles (for the listed groups).
        self._remembered = Remembered()

    def read(
        self,
        admin: AdminClient,
        metadata: Any,
        group_ids: list[str],
        batch: int,
        limit: int,
        deadline: float,
        *,
        listed: bool = True,
    ) -> KeyedReads[str, Any]:
        """Each group's description, by the own client where it can, else by librdkafka (`batch`
        groups per call, `limit` calls in flight). `listed`: `group_ids` are the cycle's listed
        groups, whose coordinators and requests are remembered (the others' only until the next listed read)."""
        if group_ids:
            brokers = [(b.host, b.port) for _, b in sorted(metadata.brokers.items())]
            if listed:
                self._remembered.keep_only(group_ids)

            def batched(security: ClientSecurity) -> KeyedReads[str, Any]:
                read = read_group_descriptions(brokers, group_ids, deadline, security, self._remembered)
                return KeyedReads(read.answers, read.errors, read.unfinished_keys)  # type: ignore[arg-type]

            try:
                described = self._choice.attempt(batched)
            except TimeoutError:  # the cycle's deadline came first: every group is unfinished
                return KeyedReads(unfinished_keys=list(group_ids))
            if described is not None:
                return described
        return describe_groups(admin, group_ids, batch, limit, deadline)
