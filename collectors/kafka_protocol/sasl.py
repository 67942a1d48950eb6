"""The SASL login of Lagwatch's own protocol connections: SaslHandshake v1, then SaslAuthenticate
frames carrying the mechanism's messages (KIP-152), before any other request but ApiVersions.

Mechanisms: PLAIN (one message), SCRAM-SHA-256/512 (RFC 5802 through `scramp`: two round trips,
and the broker's proof is checked, so a broker that does not hold the credentials is refused
too), OAUTHBEARER (RFC 7628's initial response with a bearer token). The versions are fixed:
SaslHandshake v1 and SaslAuthenticate v2 are spoken by every broker since Kafka 2.4. The
connection is short-lived (one admin cycle), so the broker's session lifetime (KIP-368
re-authentication) never comes due.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Protocol

from scramp import ScramClient, ScramException

from collectors.kafka_protocol.security import SaslSettings, SecurityRefused
from collectors.kafka_protocol.wire import Reader, Writer, error_name

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
HANDSHAKE_VERSION, AUTHENTICATE_VERSION = 1, 2
UNSUPPORTED_SASL_MECHANISM = 33
#: The mechanism's side of the exchange: yields each client message, is sent the broker's answer.
Conversation = Generator[bytes, bytes, None]


class Requester(Protocol):
    address: str

    def request(self, api_key: int, version: int, body: bytes, flexible: bool) -> Reader: ...


def authenticate(connection: Requester, sasl: SaslSettings, cluster: str, bearer: Callable[[], str]) -> None:
    """Log in over `connection` as `sasl` says (`bearer`: the OAUTHBEARER token, asked only for it)."""
    _handshake(connection, sasl.mechanism, cluster)
    conversation = _conversation(sasl, bearer)
    message = next(conversation)
    while True:
        answer = _authenticate(connection, message, sasl.mechanism, cluster)
        try:
            message = conversation.send(answer)
        except StopIteration:
            return
        except ScramException as exc:
            raise SecurityRefused(
                f"cluster {cluster}: {connection.address} failed SCRAM's server check ({exc}); the broker does not "
                "hold these credentials"
            ) from None


def _handshake(connection: Requester, mechanism: str, cluster: str) -> None:
    body = Writer().string(mechanism).bytes()
    reader = connection.request(SASL_HANDSHAKE, HANDSHAKE_VERSION, body, flexible=False)
    error_code = reader.int16()
    enabled = reader.array(Reader.string)
    if error_code == UNSUPPORTED_SASL_MECHANISM:
        raise SecurityRefused(
            f"cluster {cluster}: {connection.address} does not enable sasl.mechanism {mechanism} (it enables "
            f"{', '.join(enabled) or 'none'}); set sasl.mechanism to one of those"
        )
    if error_code:
        raise SecurityRefused(f"cluster {cluster}: SaslHandshake with {connection.address}: {error_name(error_code)}")


def _authenticate(connection: Requester, message: bytes, mechanism: str, cluster: str) -> bytes:
    body = Writer().compact_bytes(message).tagged_fields().bytes()
    reader = connection.request(SASL_AUTHENTICATE, AUTHENTICATE_VERSION, body, flexible=True)
    error_code, error_message = reader.int16(), reader.compact_nullable_string()
    answer = reader.compact_bytes()
    if error_code:
        check = (
            "the token endpoint's client and the broker's token validation"
            if mechanism == "OAUTHBEARER"
            else "sasl.mechanism, sasl.username and sasl.password"
        )
        raise SecurityRefused(
            f"cluster {cluster}: {connection.address} refused the SASL {mechanism} login "
            f"({error_name(error_code)}: {error_message or 'no reason given'}); check {check}"
        )
    return answer


def _conversation(sasl: SaslSettings, bearer: Callable[[], str]) -> Conversation:
    if sasl.mechanism == "PLAIN":
        return _plain(sasl.username, sasl.password)
    if sasl.mechanism == "OAUTHBEARER":
        extensions = sasl.oidc.extensions if sasl.oidc is not None else ()
        return _oauthbearer(bearer(), extensions)
    return _scram(sasl.mechanism, sasl.username, sasl.password)


def _plain(username: str, password: str) -> Conversation:
    yield f"\0{username}\0{password}".encode()


def _scram(mechanism: str, username: str, password: str) -> Conversation:
    client = ScramClient([mechanism], username, password)
    server_first = yield client.get_client_first().encode()
    client.set_server_first(server_first.decode())
    server_final = yield client.get_client_final().encode()
    client.set_server_final(server_final.decode())


def _oauthbearer(token: str, extensions: tuple[tuple[str, str], ...]) -> Conversation:
    """RFC 7628: `n,,` then `auth=Bearer <token>` and the extensions, each closed by ^A. A broker
    refusing the token answers an error document instead of failing; the client acknowledges it
    with a lone ^A, and the broker then fails the login with its reason."""
    fields = "".join(f"{key}={value}\x01" for key, value in (("auth", f"Bearer {token}"), *extensions))
    answer = yield f"n,,\x01{fields}\x01".encode()
    if answer:
        yield b"\x01"
