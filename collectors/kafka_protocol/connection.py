"""One blocking connection to one broker, over which Lagwatch sends its own requests.

Requests go one at a time: Lagwatch sends a handful per cycle, so pipelining would buy nothing.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any

from collectors.kafka_protocol.wire import ProtocolError, Reader, frame, request_header, response_body

#: A response bigger than this is refused: a wrong frame length must not allocate gigabytes.
MAX_RESPONSE_BYTES = 100 * 1024 * 1024
#: The security protocols a :class:`BrokerConnection` speaks.
SUPPORTED_SECURITY = ("plaintext",)


def unsupported_security(client_settings: Mapping[str, Any], reader: str) -> str | None:
    """Why `reader` (a reader over this module's connections) cannot connect to a cluster with
    these client settings (None: it can)."""
    protocol = str(client_settings.get("security.protocol", "plaintext")).lower()
    if protocol in SUPPORTED_SECURITY:
        return None
    return f"security.protocol {protocol} ({reader} speaks {', '.join(SUPPORTED_SECURITY)} only)"


class BrokerConnection:
    """One blocking TCP connection to one broker; requests go one at a time (Lagwatch sends a
    handful per cycle, so pipelining would buy nothing). PLAINTEXT only: see docs/share-groups.md."""

    def __init__(self, host: str, port: int, client_id: str, deadline: float) -> None:
        self.address = f"{host}:{port}"
        self._client_id = client_id
        self._deadline = deadline
        self._correlation_id = 0
        self._socket = socket.create_connection((host, port), timeout=self._time_left())

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
