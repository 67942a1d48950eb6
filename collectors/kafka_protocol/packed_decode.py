"""Reading a flexible response in one pass over its bytes with struct.unpack_from.

Why: the batched answers (OffsetFetch, DescribeGroups, ConsumerGroupDescribe) carry an entry
per group and partition of a whole cluster, and a method call per field (``wire.Reader``) would
cost more CPU than the requests batching saves. Each function takes the bytes and a position
and returns what it read with the position after it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TypeVar

from collectors.kafka_protocol.wire import ProtocolError, Reader

T = TypeVar("T")


def decode_whole(reader: Reader, request: str, body: Callable[[bytes, int], tuple[T, int]]) -> T:
    """`body` read after the throttle time, then the response's tagged fields; bytes that do not
    parse, or bytes left over, are a :class:`ProtocolError` naming `request`."""
    data = reader.rest()
    try:
        decoded, at = body(data, 4)
        at = skip_tags(data, at)
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{request} response does not parse: {exc}") from exc
    if at != len(data):
        raise ProtocolError(f"{request} response: {len(data) - at} bytes left after the last field")
    return decoded


def compact_array(data: bytes, at: int, item: Callable[[bytes, int], tuple[T, int]]) -> tuple[list[T], int]:
    """A compact array of `item`s (null reads as empty)."""
    count, at = uvarint(data, at)
    items = []
    for _ in range(count - 1):
        one, at = item(data, at)
        items.append(one)
    return items, at


def uvarint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ProtocolError("unsigned varint longer than 10 bytes")


def skip_tags(data: bytes, at: int) -> int:
    if data[at] == 0:  # the usual case: no tagged fields
        return at + 1
    count, at = uvarint(data, at)
    for _ in range(count):
        _tag, at = uvarint(data, at)
        size, at = uvarint(data, at)
        at += size
    return at


def compact_string(data: bytes, at: int) -> tuple[str | None, int]:
    """Compact nullable string."""
    size, at = uvarint(data, at)
    if size == 0:
        return None, at
    end = at + size - 1
    if end > len(data):
        raise IndexError("string past the end")
    return data[at:end].decode(), end


def compact_bytes(data: bytes, at: int) -> tuple[bytes, int]:
    """Compact (nullable) bytes; null reads as empty."""
    size, at = uvarint(data, at)
    end = at + max(size - 1, 0)
    if end > len(data):
        raise IndexError("bytes past the end")
    return data[at:end], end
