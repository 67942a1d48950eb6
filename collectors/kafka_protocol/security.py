"""What a cluster's client settings ask of the security of Lagwatch's own protocol connections.

The keys are librdkafka's, read with librdkafka's defaults (`security.protocol` PLAINTEXT,
`sasl.mechanism` GSSAPI, hostname verification on), so a cluster configured once in
`[cluster] client` is reached the same way by confluent-kafka and by this client. A setting this
client cannot honour is refused here, by name and with what to use instead: never ignored,
since a connection secured less than the operator asked for must not happen silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lagwatch.config.secrets import ENV_CLIENT_KEYS, named_cluster_env_var

PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
#: Who refuses, in every message (the operator may not know Lagwatch has a client of its own).
CLIENT = "Lagwatch's protocol client (share and streams groups, partition sizes, batched OffsetFetch)"
#: librdkafka's OIDC grant this client speaks (its default).
CLIENT_CREDENTIALS = "client_credentials"
#: TLS keys of librdkafka this client cannot honour, and what to set instead.
UNSUPPORTED_TLS_KEYS = {
    "ssl.keystore.location": "use ssl.certificate.location and ssl.key.location (PEM files)",
    "ssl.certificate.pem": "use ssl.certificate.location (a PEM file)",
    "ssl.key.pem": "use ssl.key.location (a PEM file)",
    "ssl.crl.location": "leave it unset (this client checks no revocation list)",
    "ssl.engine.location": "use PEM files (ssl.certificate.location, ssl.key.location)",
    "ssl.engine.id": "use PEM files (ssl.certificate.location, ssl.key.location)",
    "ssl.providers": "leave it unset (OpenSSL's default provider)",
    "ssl.curves.list": "leave it unset (OpenSSL's default curves)",
    "ssl.sigalgs.list": "leave it unset (OpenSSL's default signature algorithms)",
}
_TRUE, _FALSE = ("true", "t", "1"), ("false", "f", "0")


class SecuritySettingError(ValueError):
    """A client setting this client cannot use (unsupported, missing or unreadable): said once by
    the reader, which then reads nothing."""


class SecurityRefused(Exception):
    """The broker or the token endpoint refused this client: an untrusted or misnamed certificate,
    a failed SASL login, no token. A per-broker error of the cycle."""


@dataclass(frozen=True)
class TlsSettings:
    ca_location: str | None = None
    ca_pem: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    verify_certificate: bool = True
    verify_hostname: bool = True
    cipher_suites: str | None = None


@dataclass(frozen=True)
class OidcSettings:
    """librdkafka's `sasl.oauthbearer.method = oidc` with the client-credentials grant."""

    token_endpoint_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    #: SASL extensions sent beside the token (`sasl.oauthbearer.extensions`, key=value,...).
    extensions: tuple[tuple[str, str], ...] = ()
    #: CA of the token endpoint's TLS (`https.ca.location`; unset: the system's).
    https_ca_location: str | None = None


@dataclass(frozen=True)
class SaslSettings:
    mechanism: str
    username: str = ""
    password: str = field(default="", repr=False)
    oidc: OidcSettings | None = None


@dataclass(frozen=True)
class SecuritySettings:
    cluster: str
    protocol: str = "plaintext"
    tls: TlsSettings | None = None
    sasl: SaslSettings | None = None


def security_settings(cluster: str, client: Mapping[str, Any]) -> SecuritySettings:
    """The security `client` (librdkafka keys) asks for; a :class:`SecuritySettingError` names
    the cluster and the setting this client cannot use."""
    settings = {key: str(value) for key, value in client.items()}
    protocol = settings.get("security.protocol", "plaintext").lower()
    if protocol not in PROTOCOLS:
        raise _refuse(
            cluster, f"security.protocol {protocol.upper()}", "use PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"
        )
    tls = _tls(cluster, settings) if protocol in ("ssl", "sasl_ssl") else None
    sasl = _sasl(cluster, settings) if protocol.startswith("sasl_") else None
    return SecuritySettings(cluster, protocol, tls, sasl)


def _refuse(cluster: str, what: str, fix: str) -> SecuritySettingError:
    return SecuritySettingError(f"cluster {cluster}: {what} is not supported by {CLIENT}; {fix}")


def _tls(cluster: str, settings: dict[str, str]) -> TlsSettings:
    for key, fix in UNSUPPORTED_TLS_KEYS.items():
        if settings.get(key):
            raise _refuse(cluster, key, fix)
    algorithm = settings.get("ssl.endpoint.identification.algorithm", "https").lower()
    if algorithm not in ("https", "none"):
        raise _refuse(cluster, f"ssl.endpoint.identification.algorithm {algorithm}", 'use "https" or "none"')
    certificate, key = settings.get("ssl.certificate.location"), settings.get("ssl.key.location")
    if bool(certificate) != bool(key):
        missing = "ssl.key.location" if certificate else "ssl.certificate.location"
        raise SecuritySettingError(f"cluster {cluster}: a client certificate needs both files: set {missing}")
    return TlsSettings(
        ca_location=settings.get("ssl.ca.location") or None,
        ca_pem=settings.get("ssl.ca.pem") or None,
        certificate_location=certificate or None,
        key_location=key or None,
        key_password=settings.get("ssl.key.password") or None,
        verify_certificate=_boolean(cluster, settings, "enable.ssl.certificate.verification", True),
        verify_hostname=algorithm == "https",
        cipher_suites=settings.get("ssl.cipher.suites") or None,
    )


def _boolean(cluster: str, settings: dict[str, str], key: str, default: bool) -> bool:
    value = settings.get(key, "").lower()
    if not value:
        return default
    if value in _TRUE + _FALSE:
        return value in _TRUE
    raise SecuritySettingError(f"cluster {cluster}: {key} = {value!r} is not a boolean: use true or false")


def _sasl(cluster: str, settings: dict[str, str]) -> SaslSettings:
    # librdkafka's own default mechanism is GSSAPI; `sasl.mechanisms` is its older spelling.
    mechanism = (settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "GSSAPI").upper()
    if mechanism not in MECHANISMS:
        raise _refuse(cluster, f"sasl.mechanism {mechanism}", "use PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER")
    if mechanism == "OAUTHBEARER":
        return SaslSettings(mechanism, oidc=_oidc(cluster, settings))
    username = _required(cluster, settings, "sasl.username", f"sasl.mechanism {mechanism}")
    password = _required(cluster, settings, "sasl.password", f"sasl.mechanism {mechanism}")
    return SaslSettings(mechanism, username, password)


def _required(cluster: str, settings: dict[str, str], key: str, why: str) -> str:
    value = settings.get(key, "")
    if value:
        return value
    where = (
        f"through the environment variable {named_cluster_env_var(cluster, key)}"
        if key in ENV_CLIENT_KEYS
        else "in the cluster's client settings ([cluster.client])"
    )
    raise SecuritySettingError(f"cluster {cluster}: {why} needs {key}: set it {where}")


def _oidc(cluster: str, settings: dict[str, str]) -> OidcSettings:
    method = settings.get("sasl.oauthbearer.method", "default").lower()
    if method != "oidc":
        raise _refuse(
            cluster, f"sasl.oauthbearer.method {method} (an unsecured token or a token callback)",
            'use sasl.oauthbearer.method = "oidc" with a token endpoint (client credentials)',
        )  # fmt: skip
    grant = settings.get("sasl.oauthbearer.grant.type", CLIENT_CREDENTIALS)
    if grant != CLIENT_CREDENTIALS:
        raise _refuse(cluster, f"sasl.oauthbearer.grant.type {grant}", f"use {CLIENT_CREDENTIALS} (the default)")
    metadata = settings.get("sasl.oauthbearer.metadata.authentication.type", "none").lower()
    if metadata != "none":
        raise _refuse(cluster, f"sasl.oauthbearer.metadata.authentication.type {metadata}", "use a token endpoint")
    why = "sasl.oauthbearer.method oidc"
    return OidcSettings(
        token_endpoint_url=_required(cluster, settings, "sasl.oauthbearer.token.endpoint.url", why),
        client_id=_required(cluster, settings, "sasl.oauthbearer.client.id", why),
        client_secret=_required(cluster, settings, "sasl.oauthbearer.client.secret", why),
        scope=settings.get("sasl.oauthbearer.scope") or None,
        extensions=_extensions(cluster, settings.get("sasl.oauthbearer.extensions", "")),
        https_ca_location=settings.get("https.ca.location") or None,
    )


def _extensions(cluster: str, text: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals or not key or key == "auth":
            raise SecuritySettingError(
                f"cluster {cluster}: sasl.oauthbearer.extensions item {item!r} is not key=value (key not 'auth')"
            )
        pairs.append((key, value))
    return tuple(pairs)
