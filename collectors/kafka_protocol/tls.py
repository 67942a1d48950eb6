"""TLS for Lagwatch's own protocol connections, as librdkafka does it for the same settings.

One context per reader (CA and client certificate loaded once, not per connection); the broker's
certificate is verified against `ssl.ca.location` / `ssl.ca.pem` (else the system's CAs), and its
name against the host connected to unless `ssl.endpoint.identification.algorithm` is `none`. A
failed handshake says which of those failed and which setting fixes it, not OpenSSL's words alone.
"""

from __future__ import annotations

import os
import socket
import ssl

from collectors.kafka_protocol.security import SecurityRefused, SecuritySettingError, TlsSettings

#: OpenSSL's verify codes for a certificate that does not name the host (X509_V_ERR_*_MISMATCH).
NAME_MISMATCH_CODES = frozenset({62, 63, 64})


def tls_context(tls: TlsSettings, cluster: str) -> ssl.SSLContext:
    """The context every connection of one reader shares; an unreadable file is a
    :class:`SecuritySettingError` naming its setting."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # TLS 1.2 and newer, verification on
    context.check_hostname = tls.verify_certificate and tls.verify_hostname
    context.verify_mode = ssl.CERT_REQUIRED if tls.verify_certificate else ssl.CERT_NONE
    _load_trust(context, tls, cluster)
    if tls.certificate_location and tls.key_location:
        try:
            context.load_cert_chain(tls.certificate_location, tls.key_location, tls.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise SecuritySettingError(
                f"cluster {cluster}: ssl.certificate.location {tls.certificate_location} with ssl.key.location "
                f"{tls.key_location} cannot be loaded ({_reason(exc)}); check both files and ssl.key.password"
            ) from None
    if tls.cipher_suites:
        try:
            context.set_ciphers(tls.cipher_suites)
        except ssl.SSLError as exc:
            raise SecuritySettingError(
                f"cluster {cluster}: ssl.cipher.suites {tls.cipher_suites!r} names no usable cipher ({_reason(exc)})"
            ) from None
    return context


def _load_trust(context: ssl.SSLContext, tls: TlsSettings, cluster: str) -> None:
    """`ssl.ca.location` (a PEM file or an OpenSSL hashed directory) and `ssl.ca.pem`; neither (or
    librdkafka's `probe`): the system's CAs."""
    location = tls.ca_location if tls.ca_location != "probe" else None
    if location is None and tls.ca_pem is None:
        context.load_default_certs()
        return
    try:
        if location is not None and os.path.isdir(location):
            context.load_verify_locations(capath=location)
        elif location is not None:
            context.load_verify_locations(cafile=location)
    except (OSError, ssl.SSLError) as exc:
        raise SecuritySettingError(
            f"cluster {cluster}: ssl.ca.location {location} cannot be loaded ({_reason(exc)}); "
            "point it at the PEM file of the CA that signed the brokers' certificates"
        ) from None
    try:
        if tls.ca_pem is not None:
            context.load_verify_locations(cadata=tls.ca_pem)
    except ssl.SSLError as exc:
        raise SecuritySettingError(
            f"cluster {cluster}: ssl.ca.pem holds no usable certificate ({_reason(exc)})"
        ) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc)
    return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)


def secure(raw: socket.socket, context: ssl.SSLContext, host: str, cluster: str) -> ssl.SSLSocket:
    """The TLS handshake over `raw` (its timeout bounds it); a refusal names what to fix."""
    address = "{}:{}".format(*raw.getpeername()[:2])
    try:
        return context.wrap_socket(raw, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        raise SecurityRefused(_verify_failure(exc, host, address, cluster)) from None
    except ssl.SSLError as exc:
        raise SecurityRefused(
            f"cluster {cluster}: TLS handshake with {address} failed ({_reason(exc)}); check that security.protocol "
            "(SSL or SASL_SSL) matches the broker's listener"
        ) from None


def _verify_failure(exc: ssl.SSLCertVerificationError, host: str, address: str, cluster: str) -> str:
    detail = exc.verify_message or _reason(exc)
    if exc.verify_code in NAME_MISMATCH_CODES:
        return (
            f"cluster {cluster}: the TLS certificate of {address} does not name {host} ({detail}); connect by a "
            'name the certificate holds, or set ssl.endpoint.identification.algorithm = "none" to skip the check'
        )
    return (
        f"cluster {cluster}: the TLS certificate of {address} is not trusted ({detail}); set ssl.ca.location "
        "to the CA that signed the brokers' certificates"
    )
