"""Membership samples of a group type read over the Kafka protocol (share, streams groups).

They reuse the consumer-group metrics (state code, member count, type, one owner per partition),
so the lag step judges every group type by the same rules. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from collectors.admin.samples import GroupStateSamples
from collectors.base import SampleFactory
from collectors.kafka_protocol.wire import error_name
from lagwatch.membership import (
    GROUP_STATE_CODE,
    GROUP_TYPE_CODE,
    PARTITION_ASSIGNED_METRIC,
)
from lagwatch.samples import Sample
from lagwatch.vocabulary import Source

SOURCE = Source.ADMIN


class Member(Protocol):
    client_id: str
    member_id: str
    host: str


def group_error(kind: str, group_id: str, code: int, message: str | None) -> str | None:
    """The cycle's error line for a `kind` group ("share group") answered with an error code (None: no error)."""
    if not code:
        return None
    return f"{kind} {group_id}: {error_name(code)}" + (f" ({message})" if message else "")


def membership_samples(
    group_id: str,
    state: str,
    member_count: int,
    group_type: str,
    owners: Mapping[tuple[str, int], Member],
    topic_allowed: Callable[[str], bool],
    ts: int,
    make: SampleFactory,
) -> list[Sample]:
    """State code (an unknown state name is Unknown), member count, type and each allowed partition's owner."""
    code = GROUP_STATE_CODE.get(state, GROUP_STATE_CODE["Unknown"])
    samples = GroupStateSamples(ts, make)(group_id, code, member_count, GROUP_TYPE_CODE[group_type])
    for (topic, partition), member in sorted(owners.items()):
        if topic_allowed(topic):
            samples.append(
                make.member(ts=ts, source=SOURCE, metric=PARTITION_ASSIGNED_METRIC, kind="gauge", value=1,
                            group_id=group_id, topic=topic, partition=partition, client_id=member.client_id,
                            member_id=member.member_id, host=member.host)
            )  # fmt: skip
    return samples
