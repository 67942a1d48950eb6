"""Reading a cluster's librdkafka security settings for Lagwatch's own protocol client: librdkafka's
keys and defaults, and every setting it cannot honour refused by name with the fix (no broker
needed: these are the refusals said once, before any connection)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from collectors.kafka_protocol.connection import ClientSecurity
from collectors.kafka_protocol.oauth import TokenSource
from collectors.kafka_protocol.security import (
    CLIENT,
    OidcSettings,
    SecurityRefused,
    security_settings,
)
from shell.broker import free_port

SASL_SSL = {"security.protocol": "SASL_SSL", "sasl.username": "monitor", "sasl.password": "secret"}
OIDC = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "OAUTHBEARER",
    "sasl.oauthbearer.method": "oidc",
    "sasl.oauthbearer.client.id": "lagwatch",
    "sasl.oauthbearer.client.secret": "s3cret",
    "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
}


def reason(client: dict[str, str], cluster: str = "prod") -> str | None:
    return ClientSecurity.or_reason(cluster, client)[1]


def test_no_security_protocol_is_plaintext_and_the_keys_are_librdkafkas_case_insensitive() -> None:
    assert security_settings("prod", {}).protocol == "plaintext"
    settings = security_settings(
        "prod", {**SASL_SSL, "security.protocol": "sasl_ssl", "sasl.mechanisms": "scram-sha-256"}
    )
    assert (settings.protocol, settings.sasl and settings.sasl.mechanism) == ("sasl_ssl", "SCRAM-SHA-256")
    assert settings.tls is not None and settings.tls.verify_hostname and settings.tls.verify_certificate
    off = security_settings("prod", {**SASL_SSL, "sasl.mechanism": "PLAIN",
                                     "ssl.endpoint.identification.algorithm": "none"})  # fmt: skip
    assert off.tls is not None and not off.tls.verify_hostname
    assert security_settings("prod", {"security.protocol": "SSL"}).sasl is None
    assert (
        security_settings("prod", {**SASL_SSL, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}).tls
        is None
    )


def test_an_unsupported_mechanism_names_the_cluster_the_setting_and_the_choices() -> None:
    assert reason({**SASL_SSL, "sasl.mechanism": "GSSAPI"}) == (
        f"cluster prod: sasl.mechanism GSSAPI is not supported by {CLIENT}; use PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER"
    )
    # librdkafka's default mechanism is GSSAPI: a SASL cluster that sets none gets the same answer
    assert "sasl.mechanism GSSAPI is not supported" in (reason(SASL_SSL) or "")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"ssl.keystore.location": "/k.p12"}, f"ssl.keystore.location is not supported by {CLIENT}; use "
                                              "ssl.certificate.location and ssl.key.location (PEM files)"),
        ({"ssl.certificate.pem": "-----BEGIN"}, "ssl.certificate.pem is not supported"),
        ({"ssl.endpoint.identification.algorithm": "dns"}, "ssl.endpoint.identification.algorithm dns"),
        ({"ssl.certificate.location": "/c.pem"}, "a client certificate needs both files: set ssl.key.location"),
        ({"enable.ssl.certificate.verification": "maybe"}, "enable.ssl.certificate.verification = 'maybe' is not "
                                                           "a boolean"),
        ({"ssl.ca.location": "/no/such/ca.pem"}, "ssl.ca.location /no/such/ca.pem cannot be loaded (No such file"),
    ],
)  # fmt: skip
def test_tls_settings_this_client_cannot_use_are_refused_by_name(extra: dict[str, str], said: str) -> None:
    why = reason({**SASL_SSL, "sasl.mechanism": "SCRAM-SHA-512", **extra})
    assert why is not None and why.startswith("cluster prod: ") and said in why, why


def test_tls_keys_are_not_read_without_tls() -> None:
    """librdkafka ignores ssl.* on a PLAINTEXT or SASL_PLAINTEXT listener, and so does this client."""
    assert reason({"ssl.keystore.location": "/k.p12"}) is None
    assert reason({**SASL_SSL, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                   "ssl.keystore.location": "/k.p12"}) is None  # fmt: skip


def test_missing_credentials_name_the_environment_variable_of_the_cluster() -> None:
    why = reason({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "monitor"},
                 cluster="prod-eu1")  # fmt: skip
    assert why == (
        "cluster prod-eu1: sasl.mechanism SCRAM-SHA-512 needs sasl.password: set it through the environment "
        "variable LAGWATCH_CLUSTER_PROD_EU1_SASL_PASSWORD"
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"sasl.oauthbearer.method": "default"}, "sasl.oauthbearer.method default (an unsecured token or a token "
                                                 'callback) is not supported'),
        ({"sasl.oauthbearer.grant.type": "urn:ietf:params:oauth:grant-type:jwt-bearer"}, "use client_credentials"),
        ({"sasl.oauthbearer.metadata.authentication.type": "azure_imds"}, "azure_imds is not supported"),
        ({"sasl.oauthbearer.client.secret": ""}, "set it through the environment variable "
                                                 "LAGWATCH_CLUSTER_PROD_SASL_OAUTHBEARER_CLIENT_SECRET"),
        ({"sasl.oauthbearer.token.endpoint.url": ""}, "needs sasl.oauthbearer.token.endpoint.url: set it in the "
                                                      "cluster's client settings"),
        ({"sasl.oauthbearer.extensions": "logicalCluster"}, "sasl.oauthbearer.extensions item 'logicalCluster' is "
                                                            "not key=value"),
    ],
)  # fmt: skip
def test_oauthbearer_other_than_oidc_client_credentials_is_refused_by_name(change: dict[str, str], said: str) -> None:
    why = reason({**OIDC, **change})
    assert why is not None and why.startswith("cluster prod: ") and said in why, why


def test_oidc_settings_keep_scope_and_extensions_and_never_show_the_secret() -> None:
    extensions = "logicalCluster=lkc-1,identityPoolId=p"
    settings = security_settings(
        "prod", {**OIDC, "sasl.oauthbearer.scope": "kafka read", "sasl.oauthbearer.extensions": extensions}
    )
    assert settings.sasl is not None and settings.sasl.oidc is not None
    oidc = settings.sasl.oidc
    assert (oidc.scope, oidc.extensions) == ("kafka read", (("logicalCluster", "lkc-1"), ("identityPoolId", "p")))
    assert "s3cret" not in repr(settings)
    assert "secret" not in repr(security_settings("prod", {**SASL_SSL, "sasl.mechanism": "PLAIN"}))


def test_an_unreachable_token_endpoint_names_the_cluster_and_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/token"
    tokens = TokenSource(OidcSettings(url, "lagwatch", "s3cret"), "prod")
    with pytest.raises(SecurityRefused, match=f"cluster prod: the OAUTHBEARER token endpoint {url} did not answer"):
        tokens.token(time.monotonic() + 2)


def test_a_key_that_does_not_match_its_password_is_refused_at_setup(tmp_path: Path) -> None:
    """An encrypted client key with the wrong ssl.key.password: refused naming both files and the password."""
    key, cert = tmp_path / "client.key", tmp_path / "client.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=client", "-passout", "pass:right"],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    client = {"security.protocol": "SSL", "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    assert ClientSecurity.or_reason("prod", {**client, "ssl.key.password": "right"})[1] is None
    why = reason({**client, "ssl.key.password": "wrong"})
    assert why is not None and why.startswith(f"cluster prod: ssl.certificate.location {cert} with ssl.key.location ")
    assert why.endswith("check both files and ssl.key.password")
