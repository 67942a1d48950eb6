"""A consumer (KIP-848) group in the lag step's rows: lag_1m names a partition's pending owner (assigned,
not yet reconciled) in the cycle that read it and NULL once reconciled; group_status carries the
group epoch as newest read from the commit log. No Spark: the operator's own rows, as route.py builds them."""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa

from lagwatch.config import LagConfig
from lagwatch.membership import GROUP_STATE_CODE, GROUP_TYPE_CODE
from spark_jobs import route
from spark_jobs.lag import membership, step
from tests.spark_jobs.conftest import parsed_sample

T0 = 1_767_261_720_000  # a minute boundary
KA = {"client_id": "ka", "member_id": "ka-1", "host": "/10.0.0.1"}
KB = {"client_id": "kb", "member_id": "kb-1", "host": "/10.0.0.2"}


def cycle(ts: int, owners: dict[int, dict[str, str]], pending: dict[int, dict[str, str]], state: str) -> list[dict]:
    labels = {"source": "admin", "group_id": "g", "topic": "t"}
    rows = [
        parsed_sample(ts, "consumer_group_state", "gauge", GROUP_STATE_CODE[state], source="admin", group_id="g"),
        parsed_sample(ts, "consumer_group_members", "gauge", 2, source="admin", group_id="g"),
        parsed_sample(ts, "consumer_group_type", "gauge", GROUP_TYPE_CODE["consumer"], source="admin", group_id="g"),
    ]
    for partition in range(2):
        rows.append(parsed_sample(ts, "committed_offset", "counter", 100, partition=partition, **labels))
        rows.append(parsed_sample(ts, "consumer_lag", "gauge", 5, partition=partition, **labels))
    rows += [parsed_sample(ts, "partition_assigned", "gauge", 1, partition=p, **labels, **m) for p, m in owners.items()]
    rows += [parsed_sample(ts, "partition_pending", "gauge", 1, partition=p, **labels, **m) for p, m in pending.items()]
    return rows


def group_epoch(ts: int, epoch: int) -> dict:
    return parsed_sample(ts, "consumer_group_epoch", "gauge", epoch, source="commitlog", group_id="g")


def routed(rows: list[dict]) -> Any:
    """The operator's rows (every role) of parsed samples, as route.py builds them."""
    for row in rows:
        del row["event_time"]
    operator, _ = route.operator_rows(pa.Table.from_pylist(rows), None, lag_routing=True)
    return operator.to_pandas()


def operator_frame(rows: list[dict]) -> Any:
    frame = routed(rows)
    return frame[frame["role"] != route.METRIC]


def test_route_sends_pending_partitions_and_the_group_epoch_to_the_group_s_state():
    frame = routed([*cycle(T0, {0: KA}, {1: KB}, "Reconciling"), group_epoch(T0, 3)])
    metric_of = frame["series_key"].str.extract(r'^\["[^"]*","[^"]*","([^"]*)"')[0]
    roles = dict(zip(metric_of, frame["role"], strict=True))
    assert roles["partition_pending"] == route.MEMBER  # membership state only, like partition_assigned
    assert roles["consumer_group_epoch"] == route.LAG  # the group's state and its metric windows


def by_partition(rows: dict, column: str) -> dict[int, Any]:
    return dict(zip(rows["partition"].tolist(), rows[column].tolist(), strict=True))


def test_pending_owner_in_its_cycle_then_null_once_reconciled_and_the_group_epoch_in_group_status():
    memberships: dict = {}
    groups: dict = {}
    reconciling = [*cycle(T0, {0: KA}, {1: KB}, "Reconciling"), group_epoch(T0 - 500, 3)]
    partition_rows, group_rows = step.update_lag(operator_frame(reconciling), groups, memberships, LagConfig(), 0)
    assert by_partition(partition_rows, "owner_pending") == {0: None, 1: "kb on /10.0.0.2"}
    assert by_partition(partition_rows, "owner_client_id") == {0: "ka", 1: None}  # nobody owns p1 yet
    assert group_rows["group_epoch"].tolist() == [3] and group_rows["group_type"].tolist() == ["consumer"]
    stable = cycle(T0 + 60_000, {0: KA, 1: KB}, {}, "Stable")
    partition_rows, group_rows = step.update_lag(operator_frame(stable), groups, memberships, LagConfig(), 0)
    assert by_partition(partition_rows, "owner_pending") == {0: None, 1: None}
    assert by_partition(partition_rows, "owner_client_id") == {0: "ka", 1: "kb"}
    assert group_rows["group_epoch"].tolist() == [3]  # the newest reading, as the type


def test_membership_state_keeps_pending_and_epoch_through_a_checkpoint_and_reads_older_state():
    owned = membership.GroupMembership()
    owned.observe_pending(("t", 1), T0, ("kb-1", "kb", "/h"))
    owned.observe_group(T0, "consumer_group_epoch", 7, 600_000)
    restored = membership.decode(membership.encode({("c", "g"): owned}))[("c", "g")]
    assert restored.pending_at(("t", 1), T0, membership.BatchReadings(), ("c", "g")) == "kb on /h"
    assert restored.group_epoch == 7
    old = pickle.dumps({("c", "g"): (owned.owners, owned.group[:-1])})  # saved before epochs and pending
    before = membership.decode(old)[("c", "g")]
    assert before.group_epoch is None and before.pending == {}
