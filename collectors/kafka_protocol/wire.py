"""The Kafka wire format, as far as Lagwatch speaks it itself: primitive types, request and
response framing, and error codes by name.

Only what the few requests Lagwatch sends itself need (the share-group admin calls and
DescribeLogDirs, which no Python client has: docs/share-groups.md; and the SASL handshake
before them): fixed-width integers, unsigned varints, classic and compact (flexible-version)
strings, bytes and arrays, UUIDs and tagged fields, written and read exactly as Apache Kafka's
generated message classes do (clients/src/main/resources/common/message/*.json). Tagged fields
are always written empty and skipped on read: none of those requests needs one.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from confluent_kafka import KafkaError

T = TypeVar("T")

_INT8, _INT16, _INT32, _INT64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
#: ApiVersions is the one request whose response header stays v0 in every version (the client
#: cannot know the broker's flexible versions before it has the answer).
API_VERSIONS_KEY = 18


class ProtocolError(Exception):
    """The bytes do not follow the protocol (truncated, a wrong correlation id, a broker error code)."""


class Writer:
    """Builds a request body field by field."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def bytes(self) -> bytes:
        return b"".join(self._parts)

    def int8(self, value: int) -> Writer:
        self._parts.append(_INT8.pack(value))
        return self

    def int16(self, value: int) -> Writer:
        self._parts.append(_INT16.pack(value))
        return self

    def int32(self, value: int) -> Writer:
        self._parts.append(_INT32.pack(value))
        return self

    def boolean(self, value: bool) -> Writer:
        return self.int8(1 if value else 0)

    def uvarint(self, value: int) -> Writer:
        if value < 0:
            raise ValueError(f"unsigned varint of {value}")
        out = bytearray()
        while value > 0x7F:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        self._parts.append(bytes(out))
        return self

    def string(self, value: str | None) -> Writer:
        """Classic nullable string: int16 length (-1 for null), as the request header's client id."""
        if value is None:
            return self.int16(-1)
        data = value.encode()
        self.int16(len(data))
        self._parts.append(data)
        return self

    def compact_string(self, value: str | None) -> Writer:
        """Flexible-version string: uvarint length + 1 (0 for null)."""
        if value is None:
            return self.uvarint(0)
        data = value.encode()
        self.uvarint(len(data) + 1)
        self._parts.append(data)
        return self

    def compact_bytes(self, value: bytes) -> Writer:
        """Flexible-version bytes: uvarint length + 1, then the bytes (SaslAuthenticate's payload)."""
        self.uvarint(len(value) + 1)
        self._parts.append(value)
        return self

    def compact_array(self, items: Sequence[T] | None, write: Callable[[Writer, T], object]) -> Writer:
        """Flexible-version array: uvarint count + 1 (0 for null), then each item."""
        if items is None:
            return self.uvarint(0)
        self.uvarint(len(items) + 1)
        for item in items:
            write(self, item)
        return self

    def tagged_fields(self) -> Writer:
        """No tagged fields (the count, 0)."""
        return self.uvarint(0)


class Reader:
    """Reads a response body field by field; a read past the end is a :class:`ProtocolError`."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._at = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._at

    def _take(self, size: int) -> memoryview:
        if size < 0 or self._at + size > len(self._data):
            raise ProtocolError(f"truncated: {size} bytes wanted at {self._at} of {len(self._data)}")
        chunk = self._data[self._at : self._at + size]
        self._at += size
        return chunk

    def int8(self) -> int:
        return int(_INT8.unpack(self._take(1))[0])

    def int16(self) -> int:
        return int(_INT16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_INT32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack(self._take(8))[0])

    def boolean(self) -> bool:
        return self.int8() != 0

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ProtocolError("unsigned varint longer than 10 bytes")

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def compact_string(self) -> str:
        value = self.compact_nullable_string()
        if value is None:
            raise ProtocolError("null where the protocol has a non-null string")
        return value

    def compact_nullable_string(self) -> str | None:
        size = self.uvarint() - 1
        return None if size < 0 else bytes(self._take(size)).decode()

    def string(self) -> str:
        """Classic non-null string: int16 length (SaslHandshake's answer is not a flexible version)."""
        size = self.int16()
        if size < 0:
            raise ProtocolError("null where the protocol has a non-null string")
        return bytes(self._take(size)).decode()

    def array(self, read: Callable[[Reader], T]) -> list[T]:
        """Classic array: int32 count (-1 for null, read as empty)."""
        return [read(self) for _ in range(max(self.int32(), 0))]

    def compact_bytes(self) -> bytes:
        """Flexible-version bytes (null reads as empty: SaslAuthenticate's answer when it has none)."""
        return bytes(self._take(max(self.uvarint() - 1, 0)))

    def compact_array(self, read: Callable[[Reader], T]) -> list[T]:
        """A null array reads as empty (no request Lagwatch sends gets one back where it matters)."""
        count = self.uvarint() - 1
        return [read(self) for _ in range(max(count, 0))]

    def rest(self) -> bytes:
        """The bytes not read yet (the reader is then at the end): for a decoder that walks a large
        response itself with struct.unpack_from, where a method call per field costs too much."""
        return bytes(self._take(self.remaining))

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # the tag
            self._take(self.uvarint())


def request_header(api_key: int, version: int, correlation_id: int, client_id: str, flexible: bool) -> bytes:
    """Request header v1, or v2 (v1 + tagged fields) for a flexible request version. The client
    id keeps the classic int16-length string even in v2, so any broker can read the header."""
    header = Writer().int16(api_key).int16(version).int32(correlation_id).string(client_id)
    if flexible:
        header.tagged_fields()
    return header.bytes()


def frame(payload: bytes) -> bytes:
    """A request on the wire: int32 size, then the header and body."""
    return _INT32.pack(len(payload)) + payload


def response_body(payload: bytes, correlation_id: int, api_key: int, flexible: bool) -> Reader:
    """The body of one response (its size already removed): checks the correlation id and skips
    the header's tagged fields (response header v1) where the version is flexible."""
    reader = Reader(payload)
    answered = reader.int32()
    if answered != correlation_id:
        raise ProtocolError(f"response for correlation id {answered}, expected {correlation_id}")
    if flexible and api_key != API_VERSIONS_KEY:
        reader.skip_tagged_fields()
    return reader


_ERROR_NAMES: dict[int, str] = {
    code: name for name, code in vars(KafkaError).items() if name.isupper() and isinstance(code, int) and code >= -1
}


def error_name(code: int) -> str:
    """A broker error code's name (Kafka's, as librdkafka spells them), e.g. 16 → NOT_COORDINATOR."""
    return _ERROR_NAMES.get(code, f"error {code}")


class BrokerError(Exception):
    """A request answered with a top-level error code."""

    def __init__(self, request: str, code: int, message: str | None = None) -> None:
        super().__init__(f"{request}: {error_name(code)}" + (f" ({message})" if message else ""))
        self.code = code
