"""The wire primitives against bytes written out by hand from the Kafka protocol guide."""

from __future__ import annotations

import socket
import threading
import time
import uuid

import pytest

from collectors.kafka_protocol.connection import BrokerConnection
from collectors.kafka_protocol.wire import ProtocolError, Reader, Writer, frame, request_header, response_body


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16_384, "808001"), (2**31, "8080808008")],
)
def test_unsigned_varints_round_trip(value: int, encoded: str) -> None:
    assert Writer().uvarint(value).bytes().hex() == encoded
    assert Reader(bytes.fromhex(encoded)).uvarint() == value


def test_compact_strings_and_arrays_store_length_plus_one_and_zero_for_null() -> None:
    written = (
        Writer()
        .compact_string("ab")
        .compact_string(None)
        .compact_string("")
        .compact_array([1, 2], Writer.int32)
        .compact_array(None, Writer.int32)
        .bytes()
    )
    assert written.hex() == "036162000103000000010000000200"
    reader = Reader(written)
    assert reader.compact_string() == "ab"
    assert reader.compact_nullable_string() is None
    assert reader.compact_string() == ""
    assert reader.compact_array(Reader.int32) == [1, 2]
    assert reader.compact_array(Reader.int32) == []
    assert reader.remaining == 0


def test_bytes_and_the_classic_string_and_array_of_the_sasl_requests() -> None:
    """SaslAuthenticate v2 carries compact bytes; SaslHandshake v1's answer is a classic array of
    int16-length strings (its version is not flexible)."""
    assert Writer().compact_bytes(b"\x00ab").bytes().hex() == "04006162"
    reader = Reader(bytes.fromhex("04006162" + "00" + "00000002" + "0005504c41494e" + "000141" + "ffffffff"))
    assert (reader.compact_bytes(), reader.compact_bytes()) == (b"\x00ab", b"")  # 0: null, read as empty
    assert reader.array(Reader.string) == ["PLAIN", "A"]
    assert reader.array(Reader.string) == []  # -1: null
    assert reader.remaining == 0
    with pytest.raises(ProtocolError, match="null"):
        Reader(bytes.fromhex("ffff")).string()


def test_a_null_where_a_string_must_be_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="null"):
        Reader(b"\x00").compact_string()


def test_fixed_width_integers_are_big_endian_and_signed() -> None:
    written = Writer().int8(-1).int16(-2).int32(0x01020304).boolean(True).bytes()
    assert written.hex() == "fffffe0102030401"
    reader = Reader(written + bytes.fromhex("fffffffffffffffd"))
    assert (reader.int8(), reader.int16(), reader.int32(), reader.boolean(), reader.int64()) == (-1, -2, 0x01020304,
                                                                                                True, -3)  # fmt: skip


def test_uuids_are_sixteen_raw_bytes() -> None:
    value = uuid.UUID("0123456789abcdef0123456789abcdef")
    assert Reader(value.bytes).uuid() == value


def test_tagged_fields_are_written_empty_and_skipped_whatever_they_hold() -> None:
    assert Writer().tagged_fields().bytes() == b"\x00"
    # two tagged fields: tag 0 with 3 bytes, tag 5 with 1 byte; then an int16 that must still read right
    reader = Reader(bytes.fromhex("020003aabbcc0501dd0007"))
    reader.skip_tagged_fields()
    assert reader.int16() == 7


def test_a_read_past_the_end_is_a_protocol_error_naming_where() -> None:
    with pytest.raises(ProtocolError, match="truncated: 4 bytes wanted at 0 of 3"):
        Reader(b"\x00\x00\x01").int32()
    with pytest.raises(ProtocolError, match="truncated"):
        Reader(bytes.fromhex("056162")).compact_string()  # says 4 bytes, has 2


def test_request_header_v2_keeps_the_classic_client_id_and_adds_empty_tagged_fields() -> None:
    header = request_header(api_key=77, version=1, correlation_id=7, client_id="lw", flexible=True)
    assert header.hex() == "004d00010000000700026c7700"
    header_v1 = request_header(api_key=16, version=2, correlation_id=1, client_id="lw", flexible=False)
    assert header_v1.hex() == "001000020000000100026c77"
    assert frame(b"abc").hex() == "00000003616263"


def test_response_header_v1_tagged_fields_are_skipped_except_for_api_versions() -> None:
    flexible = bytes.fromhex("00000009001234")
    assert response_body(flexible, 9, api_key=77, flexible=True).int16() == 0x1234
    api_versions = bytes.fromhex("000000090000")  # header v0: the body (error code 0) follows at once
    assert response_body(api_versions, 9, api_key=18, flexible=True).int16() == 0
    with pytest.raises(ProtocolError, match="correlation id 9, expected 10"):
        response_body(flexible, 10, api_key=77, flexible=True)


def test_a_connection_frames_requests_and_reads_a_response_sent_in_pieces() -> None:
    """A loopback peer that answers one request in three TCP writes, as a busy broker may."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received: list[bytes] = []

    def answer() -> None:
        peer, _ = server.accept()
        with peer:
            size = int.from_bytes(peer.recv(4), "big")
            received.append(peer.recv(size))
            body = bytes.fromhex("0000000100002a")  # correlation id 1, no tags, int16 42
            wire = frame(body)
            for piece in (wire[:2], wire[2:7], wire[7:]):
                peer.sendall(piece)
                time.sleep(0.01)

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        with BrokerConnection("127.0.0.1", port, "lw", time.monotonic() + 5) as connection:
            assert connection.request(77, 1, b"\x00", flexible=True).int16() == 42
    finally:
        thread.join(5)
        server.close()
    assert received == [request_header(77, 1, 1, "lw", True) + b"\x00"]


def test_a_silent_broker_fails_at_the_deadline_not_later() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        started = time.monotonic()
        connection = BrokerConnection("127.0.0.1", server.getsockname()[1], "lw", started + 0.3)
        with connection, pytest.raises(OSError):  # socket.timeout (TimeoutError) is an OSError
            connection.request(18, 3, b"", flexible=True)
        assert time.monotonic() - started < 2
    finally:
        server.close()
