"""At the cycle's deadline the admin collector sends nothing more: the groups left are unfinished.

Why it matters: with no time left, falling back from the own protocol client to librdkafka only
sends requests that time out at once, and librdkafka has aborted the whole process on a burst of
those (an assertion in its admin requests' coordinator lookup). Real broker, real clients.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from collectors.admin import committed_offsets, group_descriptions
from collectors.admin.committed_offsets import CommittedOffsetReader
from collectors.admin.group_descriptions import GroupDescriber
from collectors.admin.requests import BoundedRequests
from collectors.kafka_protocol.connection import ClientSecurity
from harness.real_kafka import RealKafkaBroker

GROUPS = [f"deadline-group-{i}" for i in range(3)]


def _no_librdkafka(*_: Any, **__: Any) -> Any:
    raise AssertionError("librdkafka asked after the deadline")


@pytest.fixture
def passed(broker: RealKafkaBroker, monkeypatch: pytest.MonkeyPatch) -> tuple[AdminClient, Any, float]:
    """An admin client, the cluster's metadata and a deadline already passed; librdkafka's reads fail the test."""
    monkeypatch.setattr(group_descriptions, "describe_groups", _no_librdkafka)
    monkeypatch.setattr(committed_offsets, "read_committed_offsets", _no_librdkafka)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    return admin, admin.list_topics(timeout=10), time.monotonic() - 1


def _security(broker: RealKafkaBroker) -> tuple[ClientSecurity | None, str | None]:
    return ClientSecurity.or_reason("test", {"bootstrap.servers": broker.bootstrap_servers})


def test_describing_at_the_deadline_leaves_every_group_unfinished(
    broker: RealKafkaBroker, passed: tuple[AdminClient, Any, float]
) -> None:
    admin, metadata, deadline = passed
    read = GroupDescriber("admin@test", _security(broker)).read(admin, metadata, GROUPS, 100, 4, deadline)
    assert (read.answers, read.errors, read.unfinished_keys) == ({}, {}, GROUPS)


def test_committed_offsets_at_the_deadline_leave_every_group_unfinished(
    broker: RealKafkaBroker, passed: tuple[AdminClient, Any, float]
) -> None:
    admin, metadata, deadline = passed
    reads = CommittedOffsetReader("admin@test", _security(broker)).read(admin, metadata, GROUPS, 4, deadline)
    assert (list(reads), list(reads.unfinished)) == ([], GROUPS)


def test_no_librdkafka_request_starts_without_time_for_it() -> None:
    started: list[str] = []

    def submit(unit: str) -> list[Future[Any]]:
        started.append(unit)
        return []

    requests = BoundedRequests(GROUPS, submit, limit=2, deadline=time.monotonic() + 0.05)
    assert (list(requests), started, requests.unfinished) == ([], [], GROUPS)
