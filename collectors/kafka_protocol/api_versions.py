"""ApiVersions v3: which version of each request both Lagwatch and the broker speak."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from collectors.kafka_protocol.connection import BrokerConnection
from collectors.kafka_protocol.wire import API_VERSIONS_KEY, BrokerError, Reader, Writer

#: The ApiVersions version sent (flexible: compact fields, request header v2).
API_VERSIONS_VERSION = 3


def encode_api_versions(software_name: str, software_version: str) -> bytes:
    return Writer().compact_string(software_name).compact_string(software_version).tagged_fields().bytes()


def decode_api_versions(reader: Reader) -> dict[int, tuple[int, int]]:
    """Request key → (min version, max version) the broker speaks."""
    error_code = reader.int16()

    def api(r: Reader) -> tuple[int, int, int]:
        key, low, high = r.int16(), r.int16(), r.int16()
        r.skip_tagged_fields()
        return key, low, high

    apis = reader.compact_array(api)
    if error_code:
        raise BrokerError("ApiVersions", error_code)
    reader.int32()  # throttle time
    reader.skip_tagged_fields()
    return {key: (low, high) for key, low, high in apis}


def newest_common_version(versions: Mapping[int, tuple[int, int]], key: int, ours: Sequence[int]) -> int | None:
    """The newest of `ours` the broker speaks for request `key` (None: none of them)."""
    low, high = versions.get(key, (0, -1))
    return next((v for v in reversed(ours) if low <= v <= high), None)


def api_versions(connection: BrokerConnection, software_version: str) -> dict[int, tuple[int, int]]:
    """What the broker speaks (ApiVersions v3): request key → (min version, max version)."""
    body = encode_api_versions("lagwatch", software_version)
    return decode_api_versions(connection.request(API_VERSIONS_KEY, API_VERSIONS_VERSION, body, flexible=True))
