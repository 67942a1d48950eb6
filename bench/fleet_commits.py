"""OffsetCommit v2 on raw sockets, pipelined: the fleet workload's commits at a fraction of the CPU.

Why: confluent-kafka's alter_consumer_group_offsets takes one group per call and costs about a
millisecond of Python and librdkafka CPU per group, so a workload of 20,000 groups committing
every 15 s would need most of a core and dominate the host it measures. OffsetCommit itself
names one group per request, so requests are pipelined instead: WINDOW requests written at once
on each of CONNECTIONS connections, then their responses read, encoded and decoded with struct.

Made for the bench's one-node broker, which coordinates every group: no FindCoordinator, no
security. v2 (generation -1, empty member id, default retention) is an admin's commit outside
the group, as alter_consumer_group_offsets sends it; Kafka 4 still speaks it.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Sequence

OFFSET_COMMIT = 8
VERSION = 2
CONNECTIONS = 4
#: Requests in flight per connection before their responses are read.
WINDOW = 128
_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_PARTITION = struct.Struct(">iqh")  # partition, committed offset, metadata (null: length -1)
_INT32 = struct.Struct(">i")

#: One group's commit: (group id, topic, committed offset of partition 0, 1, …).
Commit = tuple[str, str, Sequence[int]]


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def encode(correlation_id: int, client_id: bytes, commit: Commit) -> bytes:
    """One OffsetCommit v2 request, framed (length prefix): one group, one topic."""
    group, topic, offsets = commit
    body = b"".join(
        (
            _HEADER.pack(OFFSET_COMMIT, VERSION, correlation_id),
            client_id,
            _string(group),
            struct.pack(">ih", -1, 0),  # generation id, member id ""
            struct.pack(">q", -1),  # retention time: the broker's default
            _INT32.pack(1),
            _string(topic),
            _INT32.pack(len(offsets)),
            *(_PARTITION.pack(p, offset, -1) for p, offset in enumerate(offsets)),
        )
    )
    return _INT32.pack(len(body)) + body


def errors_in(response: bytes) -> int:
    """Partitions whose error code is not 0 in one v2 response body (after the length prefix)."""
    pos = 4  # correlation id
    failed = 0
    (topics,) = _INT32.unpack_from(response, pos)
    pos += 4
    for _ in range(topics):
        (name_length,) = struct.unpack_from(">h", response, pos)
        pos += 2 + name_length
        (partitions,) = _INT32.unpack_from(response, pos)
        pos += 4
        for _ in range(partitions):
            failed += struct.unpack_from(">h", response, pos + 4)[0] != 0
            pos += 6
    return failed


class Committer:
    """CONNECTIONS plaintext connections to one broker, kept across cycles."""

    def __init__(self, host: str, port: int, client_id: str = "lagwatch-bench-fleet") -> None:
        self.client_id = _string(client_id)
        self.sockets = [socket.create_connection((host, port), timeout=60) for _ in range(CONNECTIONS)]
        self.readers = [s.makefile("rb") for s in self.sockets]
        self.correlation = 0

    def _read(self, index: int) -> bytes:
        reader = self.readers[index]
        head = reader.read(4)
        if len(head) < 4:
            raise ConnectionError("the broker closed the connection")
        (length,) = _INT32.unpack(head)
        return reader.read(length)

    def commit(self, commits: Iterable[Commit]) -> int:
        """Every commit, pipelined; returns the partitions the broker refused."""
        pending = list(commits)
        failed = 0
        step = WINDOW * CONNECTIONS
        for first in range(0, len(pending), step):
            batch = pending[first : first + step]
            sent = []
            for index, sock in enumerate(self.sockets):
                chunk = batch[index * WINDOW : (index + 1) * WINDOW]
                sock.sendall(b"".join(self._encode(commit) for commit in chunk))
                sent.append(len(chunk))
            for index, count in enumerate(sent):
                failed += sum(errors_in(self._read(index)) for _ in range(count))
        return failed

    def _encode(self, commit: Commit) -> bytes:
        self.correlation += 1
        return encode(self.correlation, self.client_id, commit)

    def close(self) -> None:
        for reader in self.readers:
            reader.close()
        for sock in self.sockets:
            sock.close()
