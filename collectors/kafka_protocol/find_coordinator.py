"""FindCoordinator v4+ (KIP-699, Kafka 3.0+), encoded and decoded: the coordinators of many groups
in one request.

Why batched: a cycle reads the committed offsets of every group, and before v4 each group's
coordinator took a request of its own. Field by field as Apache Kafka's FindCoordinatorRequest.json
/ FindCoordinatorResponse.json have them (common/message/ in the broker's kafka-clients jar):
v4, v5 and v6 are the same on the wire (v5 lets the broker answer TRANSACTION_ABORTABLE, v6 takes
share-group keys); all are flexible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.kafka_protocol.connection import BrokerConnection
from collectors.kafka_protocol.wire import Reader, Writer

FIND_COORDINATOR = 10
#: The versions Lagwatch speaks (all with a batch of keys), oldest first.
FIND_COORDINATOR_VERSIONS = (4, 5, 6)
#: KeyType of a consumer group's coordinator.
GROUP_KEY_TYPE = 0


@dataclass(frozen=True, slots=True)
class Coordinator:
    """One key's coordinator, or the error that stands in for it (e.g. COORDINATOR_NOT_AVAILABLE)."""

    key: str
    node_id: int
    host: str
    port: int
    error_code: int = 0
    error_message: str | None = None


def encode_find_coordinator(keys: Sequence[str], key_type: int = GROUP_KEY_TYPE) -> bytes:
    return Writer().int8(key_type).compact_array(list(keys), Writer.compact_string).tagged_fields().bytes()


def _coordinator(reader: Reader) -> Coordinator:
    key, node_id, host, port = reader.compact_string(), reader.int32(), reader.compact_string(), reader.int32()
    error_code, error_message = reader.int16(), reader.compact_nullable_string()
    reader.skip_tagged_fields()
    return Coordinator(key, node_id, host, port, error_code, error_message)


def decode_find_coordinator(reader: Reader) -> list[Coordinator]:
    reader.int32()  # throttle time
    coordinators = reader.compact_array(_coordinator)
    reader.skip_tagged_fields()
    return coordinators


#: Keys per FindCoordinator (the broker answers each key; a bound keeps one answer small).
KEYS_PER_LOOKUP = 5_000


def find_coordinators(
    connection: BrokerConnection, version: int, keys: Sequence[str], key_type: int = GROUP_KEY_TYPE
) -> list[Coordinator]:
    """The coordinator of each of `keys`: a request per KEYS_PER_LOOKUP keys, the broker answering every key."""
    found: list[Coordinator] = []
    for start in range(0, len(keys), KEYS_PER_LOOKUP):
        body = encode_find_coordinator(keys[start : start + KEYS_PER_LOOKUP], key_type)
        found += decode_find_coordinator(connection.request(FIND_COORDINATOR, version, body, flexible=True))
    return found
