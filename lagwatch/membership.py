"""Consumer-group membership: the names the admin collector and the Spark job share.

The metric names are registered in :mod:`lagwatch.vocabulary`; this module holds what they mean
for a group. Each cycle the admin collector describes every collected group (DescribeGroups) and sends:

- ``consumer_group_state``: the group's state as a code (:data:`GROUP_STATES` gives its name);
- ``consumer_group_members``: how many members the group has;
- ``partition_assigned`` = 1 for every partition a member owns, labelled group_id, topic,
  partition, client_id and the sample's two member fields, ``member_id`` and ``host``
  (``lagwatch.samples.MemberSample``).

The Spark job keeps these beside the group's lag state and writes the owner of each
partition into ``lag_1m`` and the group's state, member count and rebalances into
``group_status`` (docs/architecture.md names the columns).
"""

from __future__ import annotations

from lagwatch.vocabulary import require

GROUP_STATE_METRIC, GROUP_MEMBERS_METRIC, PARTITION_ASSIGNED_METRIC = require(
    "consumer_group_state", "consumer_group_members", "partition_assigned"
)
#: Per-group membership metrics (label group_id only).
GROUP_METRICS: tuple[str, ...] = (GROUP_STATE_METRIC, GROUP_MEMBERS_METRIC)
#: Kafka's group state names; a state's ``consumer_group_state`` code is its index.
GROUP_STATES: tuple[str, ...] = (
    "Unknown",
    "Empty",
    "Stable",
    "PreparingRebalance",
    "CompletingRebalance",
    "Dead",
)
GROUP_STATE_CODE: dict[str, int] = {name: code for code, name in enumerate(GROUP_STATES)}
#: The codes of a group in the middle of a rebalance.
REBALANCING_CODES: frozenset[int] = frozenset(
    {GROUP_STATE_CODE["PreparingRebalance"], GROUP_STATE_CODE["CompletingRebalance"]}
)
#: The codes of a group without members: nobody will read its partitions.
EMPTY_CODES: frozenset[int] = frozenset({GROUP_STATE_CODE["Empty"], GROUP_STATE_CODE["Dead"]})
#: The code of a state the broker did not say (tansu): its member count means nothing then.
UNKNOWN_CODE = GROUP_STATE_CODE["Unknown"]


def group_state_name(code: float | int | None) -> str | None:
    """The state name of a ``consumer_group_state`` value; None when it is missing or not a known code."""
    if code is None or code != code:  # None or NaN
        return None
    index = int(code)
    return GROUP_STATES[index] if 0 <= index < len(GROUP_STATES) and index == code else None
