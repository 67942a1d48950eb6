"""What this principal may do on one cluster, asked with ordinary requests, never DescribeAcls.

Listing ACLs needs Describe on the cluster, which the monitoring principal may well lack, and
would miss super users, `User:*` grants and prefixed patterns. Kafka instead computes the
operations the asking principal is authorized for when a request asks for them
(`include_authorized_operations`): on the cluster (DescribeCluster), on an existing topic
(Metadata) and on any group, existing or not (DescribeGroups). The rest follows from the order
in which Kafka answers: it checks the ACL before it looks the resource up, so a refusal on a
name that does not exist means the grant is missing and "unknown topic" means it is there.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

#: Errors that mean "the principal may not" (not "it failed").
REFUSED = {"TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}
#: Errors of a group coordinator still starting (a fresh cluster creates and loads
#: __consumer_offsets on the first group request, which can outlast one request's timeout on a
#: busy host): asked again for up to COORDINATOR_WAIT_S.
COORDINATOR_STARTING = {
    "NOT_COORDINATOR",
    "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "TIMED_OUT",
    "_TIMED_OUT",
}
COORDINATOR_WAIT_S = 30.0
UNKNOWN_TOPIC = "UNKNOWN_TOPIC_OR_PART"


class ProbeError(RuntimeError):
    """The cluster answered something that says neither yes nor no."""


@dataclass(frozen=True)
class TopicAccess:
    """One topic as this principal sees it: `exists` is None when it may not even know."""

    exists: bool | None
    #: Operations it may do (kafka-acls.sh names); None while the topic does not exist.
    operations: frozenset[str] | None


def operation_name(operation: Any) -> str:
    """AclOperation.DESCRIBE_CONFIGS → DescribeConfigs, as kafka-acls.sh spells it."""
    return "".join(word.capitalize() for word in operation.name.split("_"))


def _code(exc: BaseException) -> str:
    error = exc.args[0] if exc.args else None
    name = getattr(error, "name", None)
    return str(name() if callable(name) else type(exc).__name__)


def probe_name() -> str:
    """A resource name nobody grants literally: a grant on '*' covers it, a narrower one does not."""
    return f"lagwatch-check-{uuid.uuid4().hex}"


class AclProbe:
    """Answers "may this principal …?" for one cluster; each request is made once."""

    def __init__(self, settings: dict[str, Any], timeout_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient({**settings, "log_level": 0, "error_cb": lambda _error: None})
        self._timeout_s = timeout_s

    @cache  # noqa: B019 - one probe per check run: the cache dies with it
    def cluster_operations(self) -> frozenset[str]:
        described = self._admin.describe_cluster(include_authorized_operations=True, request_timeout=self._timeout_s)
        return self._operations(described.result(self._timeout_s).authorized_operations)

    @cache  # noqa: B019
    def topic(self, name: str) -> TopicAccess:
        from confluent_kafka import TopicCollection

        futures = self._admin.describe_topics(
            TopicCollection([name]), include_authorized_operations=True, request_timeout=self._timeout_s
        )
        try:
            described = futures[name].result(self._timeout_s)
        except Exception as exc:
            code = _code(exc)
            if code == UNKNOWN_TOPIC:
                return TopicAccess(exists=False, operations=None)
            if code in REFUSED:
                return TopicAccess(exists=None, operations=frozenset())
            raise ProbeError(f"describing topic {name!r}: {exc}") from None
        return TopicAccess(exists=True, operations=self._operations(described.authorized_operations))

    @cache  # noqa: B019
    def any_topic(self, operation: str) -> bool:
        """Describe or DescribeConfigs on every topic: asked for a topic that does not exist."""
        name = probe_name()
        if operation == "Describe":
            return self.topic(name).exists is False
        if operation == "DescribeConfigs":
            return self._may_describe_configs(name)
        raise ValueError(f"no probe for {operation} on every topic")

    @cache  # noqa: B019
    def group_operations(self, name: str) -> frozenset[str]:
        """Kafka describes any group the principal may describe, a group that does not exist as 'Dead'."""
        deadline = time.monotonic() + max(self._timeout_s, COORDINATOR_WAIT_S)
        while True:
            future = self._admin.describe_consumer_groups(
                [name], include_authorized_operations=True, request_timeout=self._timeout_s
            )[name]
            try:
                return self._operations(future.result(self._timeout_s).authorized_operations)
            except Exception as exc:
                code = "TIMED_OUT" if isinstance(exc, TimeoutError) else _code(exc)
                if code in REFUSED:
                    return frozenset()
                if code not in COORDINATOR_STARTING or time.monotonic() > deadline:
                    raise ProbeError(f"describing group {name!r}: {exc or code}") from None
            time.sleep(0.5)

    def any_group(self) -> frozenset[str]:
        return self.group_operations(probe_name())

    @cache  # noqa: B019
    def may_create(self, topic: str) -> bool:
        """CreateTopics with validate_only: Kafka checks Create (on the topic or the cluster) and stops there."""
        from confluent_kafka.admin import NewTopic

        new = NewTopic(topic, num_partitions=-1, replication_factor=-1)
        future = self._admin.create_topics([new], validate_only=True, request_timeout=self._timeout_s)[topic]
        try:
            future.result(self._timeout_s)
        except Exception as exc:
            if _code(exc) in REFUSED:
                return False
            if _code(exc) == "TOPIC_ALREADY_EXISTS":
                return True
            raise ProbeError(f"validating a create of topic {topic!r}: {exc}") from None
        return True

    def _may_describe_configs(self, topic: str) -> bool:
        from confluent_kafka.admin import ConfigResource

        resource = ConfigResource("topic", topic)
        future = self._admin.describe_configs([resource], request_timeout=self._timeout_s)[resource]
        try:
            future.result(self._timeout_s)
        except Exception as exc:
            if _code(exc) in REFUSED:
                return False
            if _code(exc) == UNKNOWN_TOPIC:
                return True
            raise ProbeError(f"describing the configs of topic {topic!r}: {exc}") from None
        return True

    @staticmethod
    def _operations(operations: Any) -> frozenset[str]:
        return frozenset(operation_name(op) for op in operations or ())
