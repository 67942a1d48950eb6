"""What a cycle's share-group reading means as samples (pure functions, no I/O).

- `share_start_offset` and `share_group_lag` per share-group partition, both from the same
  DescribeShareGroupOffsets answer, so the Spark job pairs them as it pairs a consumer group's
  committed offset and lag. A partition the broker has no start offset for yet (-1: nothing
  consumed) has none; a broker that does not compute the lag (v0 of the request) gives the
  start offset alone, never a lag Lagwatch would have to guess (acknowledged records above the
  start offset would count).
- Membership reuses the consumer-group metrics: `consumer_group_state` (Empty, Stable, Dead or
  Unknown: the share states are a subset of the classic names), `consumer_group_members`,
  `consumer_group_type` (share, so lag_1m and group_status rows say `group_type` share), and
  `partition_assigned` naming the partition's owner. In a share group several members may
  share a partition; the contract has one owner per partition and cycle, so the sample names
  the member with the lowest member id.
"""

from __future__ import annotations

from collections.abc import Callable

from collectors.base import SampleFactory
from collectors.kafka_protocol.wire import error_name
from collectors.share_groups.reader import ShareGroupsRead
from collectors.share_groups.requests import ShareGroupDescription, ShareGroupOffsets, ShareMember
from collectors.typed_group_samples import SOURCE, group_error, membership_samples
from lagwatch.samples import Sample
from lagwatch.vocabulary import SHARE_LAG_METRIC, SHARE_START_METRIC


def share_group_error(group_id: str, code: int, message: str | None) -> str | None:
    """The cycle's error line for a group answered with an error code (None: no error)."""
    return group_error("share group", group_id, code, message)


def share_offset_samples(
    offsets: ShareGroupOffsets, topic_allowed: Callable[[str], bool], ts: int, make: SampleFactory
) -> tuple[list[Sample], list[str]]:
    """(share_start_offset and share_group_lag per allowed partition, errors of partitions that failed)."""
    samples: list[Sample] = []
    errors: list[str] = []
    for p in offsets.partitions:
        if not topic_allowed(p.topic):
            continue
        if p.error_code:
            errors.append(f"share group {offsets.group_id} {p.topic}[{p.partition}]: {error_name(p.error_code)}")
            continue
        if p.start_offset < 0:  # no state for the partition yet
            continue
        labels = {"topic": p.topic, "partition": p.partition, "group_id": offsets.group_id}
        samples.append(
            make(ts=ts, source=SOURCE, metric=SHARE_START_METRIC, kind="counter", value=p.start_offset, **labels)
        )
        if p.lag is not None:
            samples.append(make(ts=ts, source=SOURCE, metric=SHARE_LAG_METRIC, kind="gauge", value=p.lag, **labels))
    return samples, errors


def share_membership_samples(
    description: ShareGroupDescription, topic_allowed: Callable[[str], bool], ts: int, make: SampleFactory
) -> list[Sample]:
    """State code, member count and one owner per assigned partition."""
    d = description
    return membership_samples(d.group_id, d.state, len(d.members), "share", _owners(d.members), topic_allowed, ts, make)


def _owners(members: tuple[ShareMember, ...]) -> dict[tuple[str, int], ShareMember]:
    """Each assigned partition's owner: the member with the lowest member id among those sharing it."""
    owners: dict[tuple[str, int], ShareMember] = {}
    for member in sorted(members, key=lambda m: m.member_id, reverse=True):
        for where in member.assignment:
            owners[where] = member
    return owners


def share_group_samples(
    read: ShareGroupsRead, topic_allowed: Callable[[str], bool], ts: int, make: SampleFactory
) -> tuple[list[Sample], list[str]]:
    """(every sample of one cycle's share-group reading, the cycle's error lines for it)."""
    samples: list[Sample] = []
    errors = list(read.errors)
    for group_id, description in sorted(read.descriptions.items()):
        error = share_group_error(group_id, description.error_code, description.error_message)
        if error is None:
            samples.extend(share_membership_samples(description, topic_allowed, ts, make))
        else:
            errors.append(error)
    for group_id, offsets in sorted(read.offsets.items()):
        error = share_group_error(group_id, offsets.error_code, offsets.error_message)
        if error is not None:
            errors.append(error)
            continue
        group_samples, partition_errors = share_offset_samples(offsets, topic_allowed, ts, make)
        samples.extend(group_samples)
        errors.extend(partition_errors)
    return samples, errors
