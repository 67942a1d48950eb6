"""Membership through a real local[2] Spark stream (the job's rollups operator): owner columns of
lag_1m, group state, members and rebalances of group_status.

Group g (topic t, partitions 0 and 1) has two members at 00:00:00 and 00:00:15; member b leaves,
and at 00:00:30 member a owns both. Batch 3 brings the 00:00:45 observation of t/0 alone, and
batch 4 its owner and the group's readings: the rows are written again with them.
"""

from __future__ import annotations

import pickle

import pytest

from lagwatch.config import LagConfig
from lagwatch.membership import GROUP_METRICS, GROUP_STATE_CODE
from spark_jobs.lag.membership import BatchReadings, GroupMembership, decode, encode
from spark_jobs.lag.rules import Membership
from tests.spark_jobs.conftest import parsed_sample, run_rollups

ADMIN = {"source": "admin", "group_id": "g"}
A = ("member-a-1", "app-a", "/10.0.0.1")
B = ("member-b-1", "app-b", "/10.0.0.2")


def offsets(ts_s: int, partition: int, committed: int, lag: int) -> list[dict]:
    labels = {**ADMIN, "topic": "t", "partition": partition}
    return [
        parsed_sample(ts_s * 1000, "committed_offset", "counter", committed, **labels),
        parsed_sample(ts_s * 1000, "consumer_lag", "gauge", lag, **labels),
    ]


def owner(ts_s: int, partition: int, member: tuple[str, str, str]) -> dict:
    member_id, client_id, host = member
    return parsed_sample(ts_s * 1000, "partition_assigned", "gauge", 1, **ADMIN, topic="t", partition=partition,
                         client_id=client_id, member_id=member_id, host=host)  # fmt: skip


def group(ts_s: int, state: str, members: int) -> list[dict]:
    return [
        parsed_sample(ts_s * 1000, "consumer_group_state", "gauge", GROUP_STATE_CODE[state], **ADMIN),
        parsed_sample(ts_s * 1000, "consumer_group_members", "gauge", members, **ADMIN),
    ]


def cycle(ts_s: int, owners: dict[int, tuple[str, str, str]], state: str) -> list[dict]:
    rows = [*offsets(ts_s, 0, 100 + ts_s, 50), *offsets(ts_s, 1, 200 + ts_s, 70)]
    return [*rows, *[owner(ts_s, p, m) for p, m in owners.items()], *group(ts_s, state, len(set(owners.values())))]


BATCHES = [
    [*cycle(0, {0: A, 1: B}, "Stable"), *cycle(15, {0: A, 1: B}, "Stable")],
    cycle(30, {0: A, 1: A}, "Stable"),
    offsets(45, 0, 145, 50),
    [owner(45, 0, A), *group(45, "Stable", 1)],
]


@pytest.fixture(scope="module")
def emitted(spark, tmp_path_factory) -> dict[str, list[list]]:
    tables = ("metrics_1m", "lag_1m", "group_status")
    return run_rollups(spark, tmp_path_factory.mktemp("members"), BATCHES, LagConfig(window_s=600), tables)


def by_partition(rows: list) -> dict:
    return {row.partition: row for row in rows}


def owner_of(row) -> tuple:
    return (row.owner_member_id, row.owner_client_id, row.owner_host)


def test_each_row_names_the_owner_of_its_cycle_and_counts_the_move(emitted):
    first, second, third, fourth = (by_partition(rows) for rows in emitted["lag_1m"])
    assert (owner_of(first[0]), owner_of(first[1])) == (A, B)
    assert (first[0].owner_changes, first[1].owner_changes) == (0, 0)
    assert (owner_of(second[0]), owner_of(second[1])) == (A, A), "the new owner of t/1"
    assert (second[0].owner_changes, second[1].owner_changes) == (0, 1)
    assert owner_of(third[0]) == (None, None, None), "its owner reading had not arrived: NULL, not the last one"
    assert list(fourth) == [0] and owner_of(fourth[0]) == A, "written again once the reading arrived"
    assert (fourth[0].committed_offset, fourth[0].lag) == (145, 50), "the same observation"


def test_group_status_has_state_members_and_rebalances(emitted):
    first, second, third, fourth = ([row for row in rows if row.group_id == "g"] for rows in emitted["group_status"])
    assert [(r.group_state, r.members, r.rebalances) for r in first] == [("Stable", 2, 0)]
    assert [(r.group_state, r.members, r.rebalances) for r in second] == [("Stable", 1, 1)]
    assert [(r.group_state, r.members) for r in third] == [(None, None)], "the cycle's readings had not arrived"
    assert [(r.group_state, r.members, r.rebalances) for r in fourth] == [("Stable", 1, 1)]


def test_group_readings_still_roll_up_as_metrics_but_owners_do_not(emitted):
    metrics = {row.metric for rows in emitted["metrics_1m"] for row in rows}
    assert {"consumer_group_members", "consumer_group_state", "committed_offset"} <= metrics
    assert "partition_assigned" not in metrics


def test_evidence_counts_cycles_without_members_and_trusts_no_unknown_state():
    state_metric, members_metric, *_type_and_epoch = GROUP_METRICS
    keep_ms, batch, key, where = 600_000, BatchReadings(), ("test", "g"), ("t", 0)
    owned = GroupMembership()
    for ts_s, state, members in ((0, "Stable", 1), (15, "Empty", 0), (30, "Empty", 0), (45, "Empty", 0)):
        owned.observe_group(ts_s * 1000, state_metric, GROUP_STATE_CODE[state], keep_ms)
        owned.observe_group(ts_s * 1000, members_metric, members, keep_ms)
        if ts_s == 0:
            owned.observe_owner(where, 0, A, keep_ms)
            assert owned.evidence(where, 0, batch, key) == Membership(0, -1, "app-a on /10.0.0.1")
    assert owned.evidence(where, 45_000, batch, key) == Membership(3, 15_000, None)
    restored = decode(encode({key: owned}))[key]
    assert restored.evidence(where, 45_000, batch, key) == Membership(3, 15_000, None)
    owned.observe_group(60_000, state_metric, GROUP_STATE_CODE["Stable"], keep_ms)
    assert owned.evidence(where, 60_000, batch, key).empty_cycles == 0  # members again: the run ends

    # tansu answers DescribeGroups with state Unknown and no members: that is no evidence.
    tansu = GroupMembership()
    tansu.observe_group(0, state_metric, GROUP_STATE_CODE["Unknown"], keep_ms)
    tansu.observe_group(0, members_metric, 0, keep_ms)
    assert tansu.evidence(where, 0, batch, key) is None
    assert GroupMembership().evidence(where, 0, batch, key) is None  # no reading at all

    # State saved before the empty run was kept (5 slots) loads with an empty run.
    old = GroupMembership(group=[15_000, GROUP_STATE_CODE["Empty"], 0, 1, []])
    (loaded,) = decode(pickle.dumps({key: (old.owners, old.group)})).values()
    assert loaded.evidence(where, 15_000, batch, key) == Membership(0, -1, None, owners_known=False)
