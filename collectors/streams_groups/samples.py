"""What a cycle's streams-group reading means as samples (pure functions, no I/O).

Membership reuses the consumer-group metrics, so the lag step judges a streams group by the
same rules as a consumer (KIP-848) group (STOP: lag and no members; STALL: an owner that does
not move):

- `consumer_group_state`: the broker's state name as a code (Empty, Assigning, Reconciling,
  Stable, Dead; NotReady, a group whose source topics are missing, is Unknown);
- `consumer_group_members` and `consumer_group_type` (streams, so lag_1m and group_status rows
  say `group_type` streams);
- `partition_assigned` per source-topic partition, naming the member whose active task reads
  it: task (subtopology S, partition N) reads partition N of every topic S reads, the user's
  source topics and the internal repartition topics alike (both carry the group's commits).
  Standby and warm-up tasks restore state; they read no source partition and own none.

The committed offsets and lag come from the admin collector's own path (commit log or
OffsetFetch): a streams group commits like any group.
"""

from __future__ import annotations

from collections.abc import Callable

from collectors.base import SampleFactory
from collectors.streams_groups.reader import StreamsGroupsRead
from collectors.streams_groups.requests import StreamsGroupDescription, StreamsMember
from collectors.typed_group_samples import group_error, membership_samples
from lagwatch.samples import Sample


def streams_group_error(group_id: str, code: int, message: str | None) -> str | None:
    """The cycle's error line for a group answered with an error code (None: no error)."""
    return group_error("streams group", group_id, code, message)


def owners(description: StreamsGroupDescription) -> dict[tuple[str, int], StreamsMember]:
    """Each source-topic partition's owner: the member whose active task reads it."""
    return {where: member for member in description.members for where in description.task_partitions(member.active)}


def streams_membership_samples(
    description: StreamsGroupDescription, topic_allowed: Callable[[str], bool], ts: int, make: SampleFactory
) -> list[Sample]:
    """State code, member count, type and one owner per partition an active task reads."""
    d = description
    return membership_samples(d.group_id, d.state, len(d.members), "streams", owners(d), topic_allowed, ts, make)


def streams_group_samples(
    read: StreamsGroupsRead, topic_allowed: Callable[[str], bool], ts: int, make: SampleFactory
) -> tuple[list[Sample], list[str]]:
    """(every membership sample of one cycle's streams-group reading, the cycle's error lines for it)."""
    samples: list[Sample] = []
    errors = list(read.errors)
    for group_id, description in sorted(read.descriptions.items()):
        error = streams_group_error(group_id, description.error_code, description.error_message)
        if error is None:
            samples.extend(streams_membership_samples(description, topic_allowed, ts, make))
        else:
            errors.append(error)
    return samples, errors
