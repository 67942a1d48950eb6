"""Descriptions of many consumer groups over Lagwatch's own protocol client: one FindCoordinator
for all groups, then per coordinator one DescribeGroups or ConsumerGroupDescribe per chunk of groups.

Why: confluent-kafka describes a group with a coordinator lookup and a describe request of its
own, and librdkafka's handling of thousands of them costs more CPU than the cycle's other work on
the groups. Which request describes a group is librdkafka's choice, so that each group reads
the same whichever client described it: ConsumerGroupDescribe first where the cluster speaks it
(only it describes a consumer (KIP-848) group, with its members' target assignments; tansu
answers it for every group), then DescribeGroups for the groups it does not know (GROUP_ID_NOT_FOUND:
a classic group on Kafka). A group neither knows does not exist and reads Dead, as librdkafka
reads it. The type ListGroups said does not choose the request (tansu answers both for the same
group, differently); the request that described the group last cycle does. Like the committed offsets' read
(:mod:`collectors.kafka_protocol.group_offsets`), a moved or loading coordinator is asked again
within the deadline (each group's coordinator and request are remembered across cycles:
:class:`Remembered`), what has not answered by then is unfinished, and a cluster that
lacks the batched requests raises :class:`NotSpoken` before any group is read.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupState, ConsumerGroupType

from collectors.kafka_protocol.api_versions import newest_common_version
from collectors.kafka_protocol.broker_pool import Address, BrokerPool
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.describe_groups import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_DESCRIBE_VERSIONS,
    DESCRIBE_GROUPS,
    DESCRIBE_GROUPS_VERSIONS,
    GroupDescription,
    decode_consumer_group_describe,
    decode_describe_groups,
    encode_consumer_group_describe,
    encode_describe_groups,
)
from collectors.kafka_protocol.find_coordinator import (
    FIND_COORDINATOR,
    FIND_COORDINATOR_VERSIONS,
    Coordinator,
    find_coordinators,
)
from collectors.kafka_protocol.group_offsets import (
    RETRIED,
    RETRY_BACKOFF_S,
    NotSpoken,
    error_text,
)
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import ProtocolError

CLIENT_ID = "lagwatch-describe"
#: Groups per describe request (a described group with members is a few hundred bytes a member).
GROUPS_PER_REQUEST = 500
GROUP_ID_NOT_FOUND, UNSUPPORTED_VERSION = 69, 35
#: Group errors that send a group on to the next request (the group is not of the request's kind).
NOT_THIS_KIND = frozenset({GROUP_ID_NOT_FOUND, UNSUPPORTED_VERSION})
_NAMES = {DESCRIBE_GROUPS: "DescribeGroups", CONSUMER_GROUP_DESCRIBE: "ConsumerGroupDescribe"}
#: A group still to describe: the requests left to ask it with, the next first.
Asks = tuple[int, ...]


@dataclass
class Remembered:
    """What a cycle's read leaves for the next, kept by the caller: each group's coordinator (as
    GroupOffsetsRead keeps them: a coordinator rarely moves, and one that moved or went away is
    looked up again) and the request that described the group (a classic group on Kafka is then
    asked with DescribeGroups first, sparing the ConsumerGroupDescribe that would not know it; a
    group that changed type since is asked with the other request at once)."""

    coordinators: dict[str, Address] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)

    def keep_only(self, group_ids: Iterable[str]) -> None:
        """Forget the groups not in `group_ids` (deleted groups are not kept forever)."""
        wanted = set(group_ids)
        self.coordinators = {g: a for g, a in self.coordinators.items() if g in wanted}
        self.requests = {g: r for g, r in self.requests.items() if g in wanted}


@dataclass
class GroupDescriptions:
    """One cycle's descriptions: the answer or the error (librdkafka's wording) per group, and the
    groups without either at the deadline (the admin collector's KeyedReads has the same fields)."""

    answers: dict[str, GroupDescription] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    unfinished_keys: list[str] = field(default_factory=list)

    @property
    def unfinished(self) -> int:
        return len(self.unfinished_keys)


def read_group_descriptions(
    brokers: Sequence[Address],
    group_ids: Sequence[str],
    deadline: float,
    security: ClientSecurity = PLAINTEXT,
    remembered: Remembered | None = None,
) -> GroupDescriptions:
    """Describe each of `group_ids`; :class:`NotSpoken` or an OSError naming each broker's failure
    before any group is read, so the caller can read them another way. `remembered` is updated."""
    with _Describer(brokers, deadline, security, remembered or Remembered()) as describer:
        return describer.describe(group_ids)


@dataclass
class _Versions:
    find: int
    classic: int
    consumer: int | None  # None: the cluster has no consumer (KIP-848) groups to describe


@dataclass
class _Describer:
    brokers: Sequence[Address]
    deadline: float
    security: ClientSecurity
    remembered: Remembered
    read: GroupDescriptions = field(default_factory=GroupDescriptions)
    _pool: BrokerPool = field(init=False)
    #: Groups whose remembered coordinator could not be reached once this cycle (looked up again).
    _failed: set[str] = field(default_factory=set)
    _bootstrap: Address = ("", 0)
    _versions: _Versions = field(default_factory=lambda: _Versions(0, 0, None))

    def __post_init__(self) -> None:
        self._pool = BrokerPool(CLIENT_ID, self.security)

    def __enter__(self) -> _Describer:
        address, versions = self._pool.first_answering(self.brokers, self.deadline)
        find = newest_common_version(versions, FIND_COORDINATOR, FIND_COORDINATOR_VERSIONS)
        classic = newest_common_version(versions, DESCRIBE_GROUPS, DESCRIBE_GROUPS_VERSIONS)
        if find is None or classic is None:
            self.__exit__()
            raise NotSpoken(
                f"{address[0]}:{address[1]} does not speak FindCoordinator v4+ and DescribeGroups v5+ "
                "(Kafka 3.0 and later do)"
            )
        consumer = newest_common_version(versions, CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_DESCRIBE_VERSIONS)
        self._versions, self._bootstrap = _Versions(find, classic, consumer), address
        return self

    def __exit__(self, *_: object) -> None:
        self._pool.close()

    def describe(self, group_ids: Sequence[str]) -> GroupDescriptions:
        pending = {group_id: self._asks(group_id) for group_id in group_ids}
        try:
            while pending and time.monotonic() < self.deadline:
                retry: dict[str, Asks] = {}
                self._round(pending, retry)
                if retry:
                    time.sleep(min(RETRY_BACKOFF_S, max(0.0, self.deadline - time.monotonic())))
                pending = retry
        except TimeoutError:
            pass  # the deadline: what did not answer stays unfinished
        done = self.read.answers.keys() | self.read.errors.keys()
        self.read.unfinished_keys = [group_id for group_id in group_ids if group_id not in done]
        return self.read

    def _asks(self, group_id: str) -> Asks:
        """librdkafka's order (ConsumerGroupDescribe first), unless DescribeGroups described the group last time."""
        if self._versions.consumer is None:
            return (DESCRIBE_GROUPS,)
        if self.remembered.requests.get(group_id) == DESCRIBE_GROUPS:
            return (DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE)
        return (CONSUMER_GROUP_DESCRIBE, DESCRIBE_GROUPS)

    def _round(self, pending: dict[str, Asks], retry: dict[str, Asks]) -> None:
        """One lookup of every coordinator not known yet, then the describes per coordinator;
        groups to ask again go to `retry` (and are looked up again)."""
        by_coordinator: dict[Address, dict[str, Asks]] = {}
        unknown = []
        for group_id, asks in pending.items():
            address = self.remembered.coordinators.get(group_id)
            if address is None:
                unknown.append(group_id)
            else:
                by_coordinator.setdefault(address, {})[group_id] = asks
        for coordinator in self._lookup(unknown):
            asks = pending.get(coordinator.key)
            if asks is None:
                continue
            if coordinator.error_code in RETRIED:
                retry[coordinator.key] = asks
            elif coordinator.error_code:
                self.read.errors[coordinator.key] = error_text(coordinator.error_code)
            else:
                address = (coordinator.host, coordinator.port)
                self.remembered.coordinators[coordinator.key] = address
                by_coordinator.setdefault(address, {})[coordinator.key] = asks
        for address, groups in by_coordinator.items():
            self._describe_on(address, groups, retry)

    def _lookup(self, group_ids: list[str]) -> list[Coordinator]:
        """The coordinators of `group_ids` (none asked for: no request); a failed lookup is each group's error."""
        if not group_ids:
            return []
        try:
            return find_coordinators(self._connection(self._bootstrap), self._versions.find, group_ids)
        except TimeoutError:
            raise  # the deadline, not the broker: describe() stops there
        except (OSError, ProtocolError, SecurityRefused) as exc:  # refused, reset, a failed login
            self._drop(self._bootstrap)
            where = f"FindCoordinator on {self._bootstrap[0]}:{self._bootstrap[1]}: {exc}"
            self.read.errors.update(dict.fromkeys(group_ids, where))
            return []

    def _describe_on(self, address: Address, groups: dict[str, Asks], retry: dict[str, Asks]) -> None:
        """Every group of one coordinator, each by its next request until one knows it."""
        while groups:
            by_api: dict[int, list[str]] = {}
            for group_id, asks in groups.items():
                by_api.setdefault(asks[0], []).append(group_id)
            not_found: dict[str, Asks] = {}
            for api, group_ids in by_api.items():
                for start in range(0, len(group_ids), GROUPS_PER_REQUEST):
                    chunk = group_ids[start : start + GROUPS_PER_REQUEST]
                    self._describe(address, api, chunk, groups, not_found, retry)
            groups = not_found

    def _describe(
        self,
        address: Address,
        api: int,
        chunk: list[str],
        groups: dict[str, Asks],
        not_found: dict[str, Asks],
        retry: dict[str, Asks],
    ) -> None:
        try:
            answers = self._request(address, api, chunk)
        except TimeoutError:
            raise
        except (OSError, ProtocolError, SecurityRefused) as exc:
            self._drop(address)
            for group_id in chunk:
                if group_id not in self._failed:  # maybe a remembered coordinator that went away
                    self._failed.add(group_id)
                    self._retry(group_id, groups[group_id], retry)
                else:
                    self.read.errors[group_id] = f"{_NAMES[api]} on {address[0]}:{address[1]}: {exc}"
            return
        asked = set(chunk)
        for answer in answers:
            group_id = answer.group_id
            if group_id not in asked:
                continue
            asked.discard(group_id)
            if answer.error_code in RETRIED:
                self._retry(group_id, groups[group_id], retry)
            elif answer.error_code in NOT_THIS_KIND and len(groups[group_id]) > 1:
                not_found[group_id] = groups[group_id][1:]
            elif answer.error_code == GROUP_ID_NOT_FOUND:
                self.read.answers[group_id] = _absent(group_id)
            elif answer.error_code:
                self.read.errors[group_id] = error_text(answer.error_code)
            else:
                self.read.answers[group_id] = answer
                self.remembered.requests[group_id] = api
        for group_id in asked:  # left out of the answer: ask again
            self._retry(group_id, groups[group_id], retry)

    def _retry(self, group_id: str, asks: Asks, retry: dict[str, Asks]) -> None:
        """Ask again in the next round, after looking the coordinator up afresh."""
        self.remembered.coordinators.pop(group_id, None)
        retry[group_id] = asks

    def _request(self, address: Address, api: int, chunk: list[str]) -> list[GroupDescription]:
        connection = self._connection(address)
        if api == DESCRIBE_GROUPS:
            version = self._versions.classic
            return decode_describe_groups(
                connection.request(api, version, encode_describe_groups(chunk), flexible=True), version
            )
        version = self._versions.consumer or 0
        body = encode_consumer_group_describe(chunk)
        return decode_consumer_group_describe(connection.request(api, version, body, flexible=True), version)

    def _connection(self, address: Address) -> BrokerConnection:
        return self._pool.connection(address, self.deadline)

    def _drop(self, address: Address) -> None:
        self._pool.drop(address)


def _absent(group_id: str) -> GroupDescription:
    """A group no coordinator knows, as librdkafka describes it: Dead, classic, no members."""
    return GroupDescription(group_id, 0, None, ConsumerGroupState.DEAD, ConsumerGroupType.CLASSIC)
