"""Lagwatch's own protocol client on the real secured broker (harness/secure_kafka.py: SASL_SSL,
the StandardAuthorizer), on each Kafka line tests/collectors run on.

Each mechanism (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN, OAUTHBEARER with a client-credentials token)
logs in as the principal the ACLs name: with Describe on the cluster DescribeLogDirs gives each
partition's size as its segment files on disk, without it the broker refuses it. A wrong
password, an untrusted CA and a certificate that does not name the host are refused with one
line naming the cluster and the setting to fix.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from collectors.kafka_protocol.api_versions import api_versions
from collectors.kafka_protocol.connection import BrokerConnection, ClientSecurity
from collectors.kafka_protocol.security import SecurityRefused
from collectors.log_dirs.reader import read_partition_sizes
from collectors.share_groups.reader import read_share_groups
from harness.secure_kafka import MECHANISMS, MONITOR, MONITOR_SOME_GROUPS_NO_CLUSTER, SecureKafkaBroker
from harness.token_endpoint import TokenEndpoint
from tests.collectors.log_dirs.test_log_dir_requests import segment_bytes_on_disk

CLUSTER = "secured-test"
PRODUCED = {0: 300, 1: 30}
#: The broker's node id (harness/real_kafka.py): the leader of every partition.
NODE = 1


def client_settings(broker: SecureKafkaBroker, user: str, mechanism: str, secret: str | None = None) -> dict[str, str]:
    """The cluster's librdkafka settings for `user` logging in with `mechanism` (as an OAuth
    client of the same id and secret for OAUTHBEARER)."""
    settings = broker.client_settings(user, password=secret, mechanism=mechanism)
    if mechanism != "OAUTHBEARER":
        return settings
    password = settings.pop("sasl.password")
    del settings["sasl.username"]
    return {
        **settings,
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": user,
        "sasl.oauthbearer.client.secret": password,
        "sasl.oauthbearer.token.endpoint.url": broker.token_endpoint.token_url,
        "sasl.oauthbearer.scope": "kafka",
    }


def security(broker: SecureKafkaBroker, user: str = MONITOR, mechanism: str = MECHANISMS[0], **extra: str) -> Any:
    return ClientSecurity.of(CLUSTER, {**client_settings(broker, user, mechanism), **extra})


def connect(broker: SecureKafkaBroker, secured: ClientSecurity, host: str = "127.0.0.1") -> BrokerConnection:
    return BrokerConnection(host, broker.port, "lagwatch-test", time.monotonic() + 10, secured)


@pytest.fixture(scope="module")
def sized_topic(secure_broker: SecureKafkaBroker) -> str:
    """A topic with records in two partitions, made by the super user."""
    admin = secure_broker.admin_workload()
    topic = f"secured-sizes-{time.time_ns()}"
    admin.create_topic(topic, len(PRODUCED))
    admin.produce(topic, PRODUCED)
    return topic


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_mechanism_logs_in_as_the_principal_its_acls_name(
    secure_broker: SecureKafkaBroker, sized_topic: str, mechanism: str
) -> None:
    brokers, leads = {NODE: ("127.0.0.1", secure_broker.port)}, {NODE: [(sized_topic, p) for p in PRODUCED]}
    sizes = read_partition_sizes(brokers, leads, time.monotonic() + 10, security=security(secure_broker, MONITOR,
                                                                                          mechanism))  # fmt: skip
    assert (sizes.errors, sizes.unreadable) == ([], None)
    assert sizes.sizes == {(sized_topic, p): segment_bytes_on_disk(secure_broker, sized_topic, p) for p in PRODUCED}
    assert sizes.sizes[(sized_topic, 0)] > sizes.sizes[(sized_topic, 1)] > 0

    no_cluster = security(secure_broker, MONITOR_SOME_GROUPS_NO_CLUSTER, mechanism)
    refused = read_partition_sizes(brokers, leads, time.monotonic() + 10, security=no_cluster)
    assert refused.sizes == {}
    assert refused.unreadable is not None and "CLUSTER_AUTHORIZATION_FAILED" in refused.unreadable
    assert "grant Describe on the Cluster resource" in refused.unreadable


def test_a_wrong_password_is_refused_naming_the_cluster_and_the_settings(secure_broker: SecureKafkaBroker) -> None:
    wrong = ClientSecurity.of(CLUSTER, secure_broker.client_settings(MONITOR, password="not-the-password"))
    with pytest.raises(SecurityRefused) as refused:
        connect(secure_broker, wrong)
    assert str(refused.value) == (
        f"cluster {CLUSTER}: 127.0.0.1:{secure_broker.port} refused the SASL SCRAM-SHA-512 login "
        "(SASL_AUTHENTICATION_FAILED: Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-512); check sasl.mechanism, sasl.username and sasl.password"
    )
    read = read_share_groups([("127.0.0.1", secure_broker.port)], lambda _: True, time.monotonic() + 10, security=wrong)
    assert read.errors == [f"share groups on 127.0.0.1:{secure_broker.port}: {refused.value}"]


def test_an_untrusted_ca_is_refused_naming_the_setting(secure_broker: SecureKafkaBroker) -> None:
    untrusted = security(secure_broker, **{"ssl.ca.location": str(secure_broker.certificates.untrusted_ca)})
    with pytest.raises(SecurityRefused) as refused:
        connect(secure_broker, untrusted)
    said = str(refused.value)
    assert said.startswith(f"cluster {CLUSTER}: the TLS certificate of 127.0.0.1:{secure_broker.port} is not trusted (")
    assert said.endswith("; set ssl.ca.location to the CA that signed the brokers' certificates")


def test_the_certificate_must_name_the_host_unless_verification_is_off(secure_broker: SecureKafkaBroker) -> None:
    """The broker's certificate names 127.0.0.1 and localhost; "127.1" reaches the same broker by a
    name it does not hold (librdkafka refuses it the same way)."""
    with pytest.raises(SecurityRefused) as refused:
        connect(secure_broker, security(secure_broker), host="127.1")
    assert str(refused.value).startswith(
        f"cluster {CLUSTER}: the TLS certificate of 127.0.0.1:{secure_broker.port} does not name 127.1 ("
    )
    assert 'ssl.endpoint.identification.algorithm = "none"' in str(refused.value)
    unchecked = security(secure_broker, **{"ssl.endpoint.identification.algorithm": "none"})
    with connect(secure_broker, unchecked, host="127.1") as connection:
        assert api_versions(connection, "0")  # logged in: the broker answers
    with connect(secure_broker, security(secure_broker), host="localhost") as connection:
        assert api_versions(connection, "0")


def test_an_oauth_token_is_fetched_once_and_reused_until_due(secure_broker: SecureKafkaBroker) -> None:
    secured = security(secure_broker, MONITOR, "OAUTHBEARER")
    before = secure_broker.token_endpoint.issued
    for _ in range(3):
        with connect(secure_broker, secured) as connection:
            assert api_versions(connection, "0")
    assert secure_broker.token_endpoint.issued == before + 1


def test_a_refused_oauth_client_names_the_token_endpoint_and_the_settings(secure_broker: SecureKafkaBroker) -> None:
    settings = client_settings(secure_broker, MONITOR, "OAUTHBEARER")
    wrong = ClientSecurity.of(CLUSTER, {**settings, "sasl.oauthbearer.client.secret": "not-the-secret"})
    with pytest.raises(SecurityRefused) as refused:
        connect(secure_broker, wrong)
    assert str(refused.value) == (
        f"cluster {CLUSTER}: the OAUTHBEARER token endpoint {secure_broker.token_endpoint.token_url} answered HTTP "
        '401 ({"error": "invalid_client"}); check sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret, '
        "and sasl.oauthbearer.scope"
    )


def test_a_token_from_another_issuer_is_refused_by_the_broker(secure_broker: SecureKafkaBroker) -> None:
    """Signed, but not by the key the broker's JWKS holds: its validator refuses it, and the line says so."""
    settings = client_settings(secure_broker, MONITOR, "OAUTHBEARER")
    other = TokenEndpoint({MONITOR: settings["sasl.oauthbearer.client.secret"]}).start()
    try:
        foreign = ClientSecurity.of(CLUSTER, {**settings, "sasl.oauthbearer.token.endpoint.url": other.token_url})
        with pytest.raises(SecurityRefused) as refused:
            connect(secure_broker, foreign)
    finally:
        other.stop()
    assert other.issued == 1
    where = f"cluster {CLUSTER}: 127.0.0.1:{secure_broker.port}"
    assert str(refused.value).startswith(f"{where} refused the SASL OAUTHBEARER login (SASL_AUTHENTICATION_FAILED")


def test_librdkafka_logs_in_to_the_harness_with_every_mechanism(secure_broker: SecureKafkaBroker) -> None:
    """The harness's own check: the broker accepts each mechanism from librdkafka too, so what this
    client is tested against is what Lagwatch's other clients meet."""
    for mechanism in MECHANISMS:
        admin = AdminClient(client_settings(secure_broker, MONITOR, mechanism))
        assert NODE in admin.list_topics(timeout=10).brokers, mechanism
