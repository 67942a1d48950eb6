"""Share groups (KIP-932) on a secured Kafka 4.x (harness/secure_kafka.py: SASL_SSL, SCRAM-SHA-512,
the StandardAuthorizer), read by least-privilege principals over Lagwatch's own protocol client.

A real ShareConsumer (logged in as the super user) is handed 1,000 records and acknowledges the
first 300. A principal holding only Describe on the group and Describe on its topic (no grant on
the cluster) is enough: the admin cycle publishes share lag 700, and the start offset and lag
equal what the broker's own ShareGroupCommand prints for the same principal (`--command-config`
with its SASL_SSL login). Each grant left out shows as Kafka answers it: without Describe on the
topic the group is described as TOPIC_AUTHORIZATION_FAILED and its offsets leave the topic out;
without Describe on the group it is not even listed (or, with Describe on the cluster, refused
as GROUP_AUTHORIZATION_FAILED). Kafka 4.1 and later only: outside tests/collectors, which also
run on the oldest supported line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AclOperation, ResourceType

from collectors.admin.collector import AdminCollector
from collectors.base import SampleFactory
from collectors.kafka_protocol.connection import ClientSecurity
from collectors.share_groups.reader import read_share_groups
from harness.secure_kafka import ADMIN_USER, MECHANISM, Acl, SecureKafkaBroker, monitor_config, new_scram_user
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE
from tests.collectors.share_groups.share_members import ShareMember, share_group_command

CLUSTER = "secured-test"
MAKE = SampleFactory(cluster=CLUSTER, collector="test-instance")
PRODUCED, ACKNOWLEDGED = 1000, 300


class ShareGroup:
    """The module's share group: its topic, its id, and its one member (still in the group)."""

    def __init__(self, broker: SecureKafkaBroker, tag: str) -> None:
        self.broker = broker
        self.topic, self.group = f"secured-share-topic-{tag}", f"secured-share-group-{tag}"
        workload = broker.admin_workload()
        workload.create_topic(self.topic, 1)
        workload.produce(self.topic, {0: PRODUCED})
        admin = broker.client_settings(ADMIN_USER)
        self.member = ShareMember(broker.bootstrap_servers, self.group, self.topic, "share-client", admin)

    def grants(self, *resources: str) -> list[Acl]:
        """Describe on each of "cluster", "group", "topic" (this group's, this topic's)."""
        names = {"cluster": (ResourceType.BROKER, "kafka-cluster"), "group": (ResourceType.GROUP, self.group),
                 "topic": (ResourceType.TOPIC, self.topic)}  # fmt: skip
        return [Acl(*names[resource], AclOperation.DESCRIBE) for resource in resources]

    def principal(self, name: str, *resources: str) -> tuple[str, str]:
        """A new user holding Describe on exactly `resources`: (name, password)."""
        user = f"{name}-{self.group}"
        return new_scram_user(self.broker, user, self.grants(*resources))


@pytest.fixture(scope="module")
def share_group(secure_broker: SecureKafkaBroker) -> Iterator[ShareGroup]:
    if secure_broker.version < (4, 1, 0):
        pytest.skip(f"share groups are GA from Kafka 4.1 (broker {secure_broker.version_text})")
    made = ShareGroup(secure_broker, str(time.time_ns()))
    try:
        made.member.acknowledge_first(ACKNOWLEDGED)
        yield made
    finally:
        made.member.close()


def command_config(path: Path, broker: SecureKafkaBroker, user: str, password: str) -> Path:
    """The Java tools' client properties for `user` on the SASL_SSL listener."""
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={MECHANISM}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={broker.certificates.ca}\n"
    )
    return path


def collector(broker: SecureKafkaBroker, user: str, password: str, shares: ShareGroup) -> AdminCollector:
    """The admin collector as an operator configures it: no secret in the file, the login from the environment."""
    config = monitor_config(broker, user, password, cluster=CLUSTER, commit_log="off",
                            groups_allow=[f"^{shares.group}$"], topics_allow=[f"^{shares.topic}$"])  # fmt: skip
    return AdminCollector(config)


@pytest.mark.slow
def test_describe_on_group_and_topic_reads_the_share_lag_the_brokers_tool_prints(
    secure_broker: SecureKafkaBroker, share_group: ShareGroup, tmp_path: Path
) -> None:
    user, password = share_group.principal("share-monitor", "group", "topic")
    admin = collector(secure_broker, user, password, share_group)
    try:
        result = admin.collect(1_700_000_000_000, MAKE)
    finally:
        admin.close()
    assert result.ok and result.errors == [], result.errors
    published = {(s.metric, s.topic, s.partition): s.value for s in result.samples if s.group_id == share_group.group}
    lag = PRODUCED - ACKNOWLEDGED
    assert published[("share_group_lag", share_group.topic, 0)] == lag
    assert {k: v for k, v in published.items() if k[0] != "share_start_offset"} == {
        ("share_group_lag", share_group.topic, 0): lag,
        ("consumer_group_state", None, None): GROUP_STATE_CODE["Stable"],
        ("consumer_group_members", None, None): 1,
        ("consumer_group_type", None, None): GROUP_TYPE_CODE["share"],
        ("partition_assigned", share_group.topic, 0): 1,
    }
    properties = command_config(tmp_path / "monitor.properties", secure_broker, user, password)
    tool = share_group_command(secure_broker.home, secure_broker.bootstrap_servers, share_group.group, properties)
    start = published[("share_start_offset", share_group.topic, 0)]
    assert tool == {(share_group.topic, 0): (start, lag)}


def _read(broker: SecureKafkaBroker, user: str, password: str, group: str) -> Any:
    security = ClientSecurity.of(CLUSTER, broker.client_settings(user, password=password))
    deadline = time.monotonic() + 10
    return read_share_groups([("127.0.0.1", broker.port)], lambda g: g == group, deadline, security=security)


def test_without_describe_on_the_topic_the_group_is_refused_and_its_offsets_leave_the_topic_out(
    secure_broker: SecureKafkaBroker, share_group: ShareGroup
) -> None:
    read = _read(secure_broker, *share_group.principal("group-only", "group"), share_group.group)
    description, offsets = read.descriptions[share_group.group], read.offsets[share_group.group]
    assert (description.error_code, description.members) == (29, ())  # TOPIC_AUTHORIZATION_FAILED
    assert (offsets.error_code, offsets.partitions) == (0, ()), "the topic is left out, without an error"


def test_without_describe_on_the_group_it_is_not_listed_or_refused_with_describe_on_the_cluster(
    secure_broker: SecureKafkaBroker, share_group: ShareGroup
) -> None:
    hidden = _read(secure_broker, *share_group.principal("topic-only", "topic"), share_group.group)
    assert (hidden.descriptions, hidden.offsets, hidden.errors) == ({}, {}, [])
    refused = _read(secure_broker, *share_group.principal("cluster-topic", "cluster", "topic"), share_group.group)
    group = share_group.group
    assert (refused.descriptions[group].error_code, refused.offsets[group].error_code) == (30, 30)  # GROUP_AUTH…
