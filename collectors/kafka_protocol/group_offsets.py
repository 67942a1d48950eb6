"""Committed offsets of many groups over Lagwatch's own protocol client: one FindCoordinator for
all groups, then one OffsetFetch per coordinator and chunk of groups.

Why: a request per group (what confluent-kafka sends) costs far more CPU per committed offset
than the offsets themselves; batched, a cycle of thousands of groups is a few requests.
The whole read stays within the cycle's deadline: a group whose coordinator moved
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) has it looked up again, one whose coordinator is
still loading (COORDINATOR_LOAD_IN_PROGRESS) is asked again after a short pause, and what has
not answered by the deadline is left unfinished, never waited for. A broker that does not
speak OffsetFetch v8 or FindCoordinator v4 (Kafka before 3.0) raises :class:`NotSpoken`
before any group is read, so the caller can read them another way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from collectors.kafka_protocol.api_versions import newest_common_version
from collectors.kafka_protocol.broker_pool import BrokerPool
from collectors.kafka_protocol.connection import PLAINTEXT, BrokerConnection, ClientSecurity
from collectors.kafka_protocol.find_coordinator import (
    FIND_COORDINATOR,
    FIND_COORDINATOR_VERSIONS,
    Coordinator,
    find_coordinators,
)
from collectors.kafka_protocol.offset_fetch import (
    OFFSET_FETCH,
    OFFSET_FETCH_VERSIONS,
    CommittedOffset,
    decode_offset_fetch,
    encode_offset_fetch,
)
from collectors.kafka_protocol.security import SecurityRefused
from collectors.kafka_protocol.wire import ProtocolError, error_name

CLIENT_ID = "lagwatch-offsets"
#: Groups per OffsetFetch: an answer of ≈ 0.2 MB at 20 partitions a group; its samples are built before the next.
GROUPS_PER_REQUEST = 500
#: Pause before asking again for groups whose coordinator is loading or moving.
RETRY_BACKOFF_S = 0.1
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
#: Group errors asked again within the cycle (each round looks every coordinator up afresh).
RETRIED = frozenset({COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})


class NotSpoken(Exception):
    """The cluster does not speak the batched requests (OffsetFetch v8+, FindCoordinator v4+)."""


@dataclass(slots=True)
class GroupCommits:
    """One group's committed offsets, or the error (librdkafka's wording: NAME: description) instead."""

    group_id: str
    partitions: list[CommittedOffset]
    error: str | None = None


def error_text(code: int) -> str:
    """A group error as the admin collector words librdkafka's (GROUP_AUTHORIZATION_FAILED: Broker: …)."""
    return f"{error_name(code)}: {KafkaError(code).str()}"


@dataclass
class _Versions:
    find: int
    fetch: int


@dataclass
class GroupOffsetsRead:
    """One cycle's read: iterate it for each group's answer as its response arrives; `unfinished`
    then names the groups still without one at the deadline."""

    brokers: Sequence[tuple[str, int]]
    group_ids: Sequence[str]
    deadline: float
    security: ClientSecurity = PLAINTEXT
    software_version: str = "0"
    require_stable: bool = False
    #: Each group's coordinator as last found, kept by the caller across cycles: a coordinator
    #: rarely moves, and a group whose did answers NOT_COORDINATOR and is looked up again.
    coordinators: dict[str, tuple[str, int]] = field(default_factory=dict)
    unfinished: list[str] = field(default_factory=list)
    _pool: BrokerPool = field(init=False)
    _answered: set[str] = field(default_factory=set)
    #: Groups whose remembered coordinator could not be reached once this cycle (looked up again).
    _failed: set[str] = field(default_factory=set)
    _bootstrap: tuple[str, int] = ("", 0)
    _versions: _Versions | None = None

    def __post_init__(self) -> None:
        self.unfinished = list(self.group_ids)
        self._pool = BrokerPool(CLIENT_ID, self.security)

    def open(self) -> GroupOffsetsRead:
        """Connect to the first broker that answers and check it speaks the batched requests
        (:class:`NotSpoken` if not); an OSError naming each broker's failure if none answers, a
        TimeoutError if the deadline comes first."""
        address, versions = self._pool.first_answering(self.brokers, self.deadline, self.software_version)
        find = newest_common_version(versions, FIND_COORDINATOR, FIND_COORDINATOR_VERSIONS)
        fetch = newest_common_version(versions, OFFSET_FETCH, OFFSET_FETCH_VERSIONS)
        if find is None or fetch is None:
            self.close()
            missing = f"OffsetFetch v{OFFSET_FETCH_VERSIONS[0]}+" if fetch is None else ""
            if find is None:
                missing += (" and " if missing else "") + f"FindCoordinator v{FIND_COORDINATOR_VERSIONS[0]}+"
            raise NotSpoken(f"{address[0]}:{address[1]} does not speak {missing} (Kafka 3.0 and later do)")
        self._versions, self._bootstrap = _Versions(find, fetch), address
        return self

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> GroupOffsetsRead:
        return self.open()

    def __exit__(self, *_: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[GroupCommits]:
        if self._versions is None:
            raise RuntimeError("GroupOffsetsRead.open() first")
        pending = list(self.group_ids)
        try:
            while pending and time.monotonic() < self.deadline:
                retry: list[str] = []
                yield from self._round(pending, retry)
                if retry:
                    time.sleep(min(RETRY_BACKOFF_S, max(0.0, self.deadline - time.monotonic())))
                pending = retry
        except TimeoutError:
            pass  # the deadline: what did not answer stays unfinished
        finally:
            self.unfinished = [g for g in self.group_ids if g not in self._answered]

    def _round(self, group_ids: list[str], retry: list[str]) -> Iterator[GroupCommits]:
        """One lookup of every coordinator not known yet, then an OffsetFetch per coordinator and
        chunk; groups to ask again go to `retry` (and are looked up again)."""
        by_coordinator: dict[tuple[str, int], list[str]] = {}
        unknown = []
        for group_id in group_ids:
            address = self.coordinators.get(group_id)
            if address is None:
                unknown.append(group_id)
            else:
                by_coordinator.setdefault(address, []).append(group_id)
        try:
            coordinators = self._coordinators(unknown) if unknown else []
        except TimeoutError:
            raise  # the deadline, not the broker: __iter__ stops there
        except (OSError, ProtocolError, SecurityRefused) as exc:  # refused, reset, a failed login
            self._drop(self._bootstrap)
            where = f"FindCoordinator on {self._bootstrap[0]}:{self._bootstrap[1]}: {exc}"
            for group_id in unknown:
                yield self._done(GroupCommits(group_id, [], where))
            coordinators = []
        for coordinator in coordinators:
            if coordinator.error_code in RETRIED:
                retry.append(coordinator.key)
            elif coordinator.error_code:
                yield self._done(GroupCommits(coordinator.key, [], error_text(coordinator.error_code)))
            else:
                address = (coordinator.host, coordinator.port)
                self.coordinators[coordinator.key] = address
                by_coordinator.setdefault(address, []).append(coordinator.key)
        for address, groups in by_coordinator.items():
            for start in range(0, len(groups), GROUPS_PER_REQUEST):
                yield from self._fetch(address, groups[start : start + GROUPS_PER_REQUEST], retry)

    def _coordinators(self, group_ids: list[str]) -> list[Coordinator]:
        assert self._versions is not None
        return find_coordinators(self._connection(self._bootstrap), self._versions.find, group_ids)

    def _fetch(self, address: tuple[str, int], groups: list[str], retry: list[str]) -> Iterator[GroupCommits]:
        assert self._versions is not None
        body = encode_offset_fetch(groups, self._versions.fetch, self.require_stable)
        try:
            connection = self._connection(address)
            answers = decode_offset_fetch(connection.request(OFFSET_FETCH, self._versions.fetch, body, flexible=True))
        except TimeoutError:
            raise
        except (OSError, ProtocolError, SecurityRefused) as exc:
            self._drop(address)
            for group_id in groups:
                if group_id in self.coordinators and group_id not in self._failed:  # maybe a coordinator that moved
                    self._failed.add(group_id)
                    self._retry(group_id, retry)
                else:
                    yield self._done(GroupCommits(group_id, [], f"OffsetFetch on {address[0]}:{address[1]}: {exc}"))
            return
        asked = set(groups)
        for answer in answers:
            if answer.group_id not in asked:
                continue
            asked.discard(answer.group_id)
            if answer.error_code in RETRIED:
                self._retry(answer.group_id, retry)
            elif answer.error_code:
                yield self._done(GroupCommits(answer.group_id, [], error_text(answer.error_code)))
            else:
                yield self._done(GroupCommits(answer.group_id, answer.partitions))
        for group_id in asked:  # left out of the answer: ask again
            self._retry(group_id, retry)

    def _retry(self, group_id: str, retry: list[str]) -> None:
        """Ask again in the next round, after looking the coordinator up afresh."""
        self.coordinators.pop(group_id, None)
        retry.append(group_id)

    def _done(self, answer: GroupCommits) -> GroupCommits:
        self._answered.add(answer.group_id)
        return answer

    def _connection(self, address: tuple[str, int]) -> BrokerConnection:
        return self._pool.connection(address, self.deadline)

    def _drop(self, address: tuple[str, int]) -> None:
        self._pool.drop(address)
