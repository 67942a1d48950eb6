"""Consumer-group membership: the names the admin collector and the Spark job share.

The metric names are registered in :mod:`lagwatch.vocabulary`; this module holds what they mean
for a group. Each cycle the admin collector describes every collected group (DescribeGroups) and sends:

- ``consumer_group_state``: the group's state as a code (:data:`GROUP_STATES` gives its name);
- ``consumer_group_members``: how many members the group has;
- ``consumer_group_type``: the group's protocol as a code (:data:`GROUP_TYPES` gives its name:
  ``classic``, ``consumer`` for KIP-848 groups, ``share``, ``streams``), where the broker says it;
- ``partition_assigned`` = 1 for every partition a member owns, labelled group_id, topic,
  partition, client_id and the sample's two member fields, ``member_id`` and ``host``
  (``lagwatch.samples.MemberSample``).

Consumer (KIP-848) groups add what the classic protocol has no word for:

- ``partition_pending`` = 1 for every partition in a member's target assignment that the member
  does not own yet (assigned, not yet reconciled), labelled like ``partition_assigned`` with the
  member that will own it (DescribeGroups' target assignment, and the commit log's);
- ``consumer_group_epoch`` (label group_id) and ``consumer_group_member_epoch`` (labels group_id,
  client_id, member_id, host): the group epoch and each member's epoch, from the commit log only
  (the Python client's describe does not carry them).

From the commit log, every group (classic or consumer) also has ``consumer_group_rebalances_total``:
the coordinator's own count of its rebalances (a classic group's generation, a consumer group's
epoch), so rebalances that start and finish between two collector cycles are all counted.

The Spark job keeps these beside the group's lag state and writes the owner of each
partition (and its pending owner) into ``lag_1m`` and the group's state, member count, epoch and
rebalances into ``group_status`` (docs/architecture.md names the columns).
"""

from __future__ import annotations

from lagwatch.vocabulary import require

GROUP_STATE_METRIC, GROUP_MEMBERS_METRIC, GROUP_TYPE_METRIC, PARTITION_ASSIGNED_METRIC = require(
    "consumer_group_state", "consumer_group_members", "consumer_group_type", "partition_assigned"
)
PARTITION_PENDING_METRIC, GROUP_EPOCH_METRIC, MEMBER_EPOCH_METRIC = require(
    "partition_pending", "consumer_group_epoch", "consumer_group_member_epoch"
)
#: Per-group membership metrics (label group_id only).
(REBALANCES_METRIC,) = require("consumer_group_rebalances_total")
GROUP_METRICS: tuple[str, ...] = (
    GROUP_STATE_METRIC,
    GROUP_MEMBERS_METRIC,
    GROUP_TYPE_METRIC,
    GROUP_EPOCH_METRIC,
    REBALANCES_METRIC,
)
#: Per-partition membership metrics naming a member (``MemberSample``): its owner, and the member
#: whose target assignment holds it while it is not reconciled yet.
MEMBER_METRICS: tuple[str, ...] = (PARTITION_ASSIGNED_METRIC, PARTITION_PENDING_METRIC)
#: Kafka's group state names; a state's ``consumer_group_state`` code is its index. Classic groups
#: rebalance through PreparingRebalance and CompletingRebalance, consumer (KIP-848) groups through
#: Assigning (the coordinator computes a new target assignment) and Reconciling (members converge on it).
GROUP_STATES: tuple[str, ...] = (
    "Unknown",
    "Empty",
    "Stable",
    "PreparingRebalance",
    "CompletingRebalance",
    "Dead",
    "Assigning",
    "Reconciling",
)
GROUP_STATE_CODE: dict[str, int] = {name: code for code, name in enumerate(GROUP_STATES)}
#: The codes of a group in the middle of a rebalance.
REBALANCING_CODES: frozenset[int] = frozenset(
    GROUP_STATE_CODE[name] for name in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
)
#: Group protocol names as the lake shows them (``group_type``); a type's ``consumer_group_type``
#: code is its index, and "unknown" (code 0: the broker did not say) is never written to the lake.
GROUP_TYPES: tuple[str, ...] = ("unknown", "classic", "consumer", "share", "streams")
GROUP_TYPE_CODE: dict[str, int] = {name: code for code, name in enumerate(GROUP_TYPES)}
#: The codes of a group without members: nobody will read its partitions.
EMPTY_CODES: frozenset[int] = frozenset({GROUP_STATE_CODE["Empty"], GROUP_STATE_CODE["Dead"]})
#: The code of a state the broker did not say (tansu): its member count means nothing then.
UNKNOWN_CODE = GROUP_STATE_CODE["Unknown"]


def group_state_name(code: float | int | None) -> str | None:
    """The state name of a ``consumer_group_state`` value; None when it is missing or not a known code."""
    return _name_of(code, GROUP_STATES)


def group_type_name(code: float | int | None) -> str | None:
    """The type name of a ``consumer_group_type`` value; None when missing, unknown or not a known code."""
    return _name_of(code, GROUP_TYPES) if code != GROUP_TYPE_CODE["unknown"] else None


def _name_of(code: float | int | None, names: tuple[str, ...]) -> str | None:
    if code is None or code != code:  # None or NaN
        return None
    index = int(code)
    return names[index] if 0 <= index < len(names) and index == code else None
