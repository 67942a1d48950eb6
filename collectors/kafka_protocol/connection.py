"""One blocking connection to one broker, over which Lagwatch sends its own requests, secured as
the cluster's client settings say (TLS, SASL: `security.py`, `tls.py`, `sasl.py`).

Requests go one at a time: Lagwatch sends a handful per cycle, so pipelining would buy nothing.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.kafka_protocol import sasl
from collectors.kafka_protocol.oauth import TokenSource
from collectors.kafka_protocol.security import SecuritySettingError, SecuritySettings, security_settings
from collectors.kafka_protocol.tls import secure, tls_context
from collectors.kafka_protocol.wire import ProtocolError, Reader, frame, request_header, response_body

#: A response bigger than this is refused: a wrong frame length must not allocate gigabytes.
MAX_RESPONSE_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class ClientSecurity:
    """One cluster's security, made once per reader: the TLS context (CA and client certificate
    loaded once) and the OAUTHBEARER token source (a token kept across connections)."""

    settings: SecuritySettings
    context: ssl.SSLContext | None = None
    tokens: TokenSource | None = None

    @classmethod
    def of(cls, cluster: str, client_settings: Mapping[str, Any]) -> ClientSecurity:
        """From the cluster's librdkafka settings; a :class:`SecuritySettingError` names the
        setting this client cannot use."""
        settings = security_settings(cluster, client_settings)
        context = tls_context(settings.tls, cluster) if settings.tls is not None else None
        oidc = settings.sasl.oidc if settings.sasl is not None else None
        return cls(settings, context, TokenSource(oidc, cluster) if oidc is not None else None)

    @classmethod
    def or_reason(cls, cluster: str, client_settings: Mapping[str, Any]) -> tuple[ClientSecurity | None, str | None]:
        """(the security, None), or (None, why this client cannot connect to the cluster)."""
        try:
            return cls.of(cluster, client_settings), None
        except SecuritySettingError as exc:
            return None, str(exc)

    def bearer(self, deadline: float) -> str:
        """The OAUTHBEARER token (fetched when due, within the deadline)."""
        if self.tokens is None:
            raise SecuritySettingError(f"cluster {self.settings.cluster}: no token endpoint for OAUTHBEARER")
        return self.tokens.token(deadline)


#: No TLS, no SASL (a cluster whose client settings set no security.protocol).
PLAINTEXT = ClientSecurity(SecuritySettings(cluster=""))


class BrokerConnection:
    """One blocking TCP connection to one broker, with TLS and a SASL login when the cluster's
    security asks for them; requests go one at a time, all within the cycle's deadline."""

    def __init__(
        self, host: str, port: int, client_id: str, deadline: float, security: ClientSecurity = PLAINTEXT
    ) -> None:
        self.address = f"{host}:{port}"
        self._client_id = client_id
        self._deadline = deadline
        self._correlation_id = 0
        self._socket: socket.socket = socket.create_connection((host, port), timeout=self._time_left())
        try:
            self._secure(host, security)
        except BaseException:
            self._socket.close()
            raise

    def _secure(self, host: str, security: ClientSecurity) -> None:
        cluster = security.settings.cluster
        if security.context is not None:
            self._socket.settimeout(self._time_left())
            self._socket = secure(self._socket, security.context, host, cluster)
        if security.settings.sasl is not None:
            sasl.authenticate(self, security.settings.sasl, cluster, lambda: security.bearer(self._deadline))

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._socket.close()

    def _time_left(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{self.address}: cycle deadline reached")
        return left

    def request(self, api_key: int, version: int, body: bytes, flexible: bool) -> Reader:
        """Send one request and wait (until the deadline) for its response's body."""
        self._correlation_id += 1
        header = request_header(api_key, version, self._correlation_id, self._client_id, flexible)
        self._socket.settimeout(self._time_left())
        self._socket.sendall(frame(header + body))
        size = int.from_bytes(self._receive(4), "big", signed=True)
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise ProtocolError(f"{self.address}: response size {size}")
        return response_body(self._receive(size), self._correlation_id, api_key, flexible)

    def _receive(self, size: int) -> bytes:
        chunks, wanted = [], size
        while wanted:
            self._socket.settimeout(self._time_left())
            chunk = self._socket.recv(min(wanted, 1 << 16))
            if not chunk:
                raise ProtocolError(f"{self.address}: connection closed by the broker")
            chunks.append(chunk)
            wanted -= len(chunk)
        return b"".join(chunks)
