"""Membership from the commit log in the lag step: a group whose last member left is judged STOP
as of the log's record, before the next collector cycle, with the same rules as the admin readings."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lagwatch.config import LagConfig
from lagwatch.membership import GROUP_STATE_CODE
from spark_jobs import route
from spark_jobs.lag import step
from tests.spark_jobs.conftest import parsed_sample

T0 = 1_767_261_720_000
CYCLE_MS = 15_000


def operator_frame(rows: list[dict[str, Any]]) -> Any:
    for row in rows:
        del row["event_time"]
    operator, _ = route.operator_rows(pa.Table.from_pylist(rows), None, lag_routing=True)
    frame = operator.to_pandas()
    return frame[frame["role"] != route.METRIC]


def cycles(count: int, committed: int, lag: int) -> list[dict[str, Any]]:
    """`count` admin cycles of one consumer owning t/0: Stable, 1 member, a lag that stays."""
    rows = []
    labels = {"source": "admin", "group_id": "g", "topic": "t", "partition": 0}
    for cycle in range(count):
        ts = T0 + cycle * CYCLE_MS
        rows.append(parsed_sample(ts, "consumer_group_state", "gauge", 2, source="admin", group_id="g"))
        rows.append(parsed_sample(ts, "consumer_group_members", "gauge", 1, source="admin", group_id="g"))
        rows.append(parsed_sample(ts, "committed_offset", "counter", committed + cycle, **labels))
        rows.append(parsed_sample(ts, "consumer_lag", "gauge", lag, **labels))
        owner = {"client_id": "c1", "member_id": "c1-1", "host": "/10.0.0.1"}
        rows.append(parsed_sample(ts, "partition_assigned", "gauge", 1, **labels, **owner))
    return rows


def left(ts: int, commit_offset: int) -> list[dict[str, Any]]:
    """What the collector publishes from the commit log when the last member commits and leaves."""
    return [
        parsed_sample(ts - 5, "committed_offset", "counter", commit_offset, source="commitlog", group_id="g",
                      topic="t", partition=0),
        parsed_sample(ts, "consumer_group_state", "gauge", GROUP_STATE_CODE["Empty"], source="commitlog",
                      group_id="g"),
        parsed_sample(ts, "consumer_group_members", "gauge", 0, source="commitlog", group_id="g"),
    ]  # fmt: skip


def test_commit_log_membership_samples_are_routed_to_the_group_like_admin_ones():
    frame = operator_frame(left(T0, 100))
    assert sorted(frame["role"].tolist()) == [route.LAG] * 3


def test_a_group_whose_last_member_left_is_stop_as_of_the_log_record():
    groups: dict = {}
    memberships: dict = {}
    config = LagConfig()
    _, first = step.update_lag(operator_frame(cycles(3, 100, 50)), groups, memberships, config, 0)
    assert first["status"].tolist() == ["OK"]
    leave_ts = T0 + 2 * CYCLE_MS + 4_000  # between two collector cycles
    partitions, groups_rows = step.update_lag(operator_frame(left(leave_ts, 102)), groups, memberships, config, 0)
    assert groups_rows["status"].tolist() == ["STOP"]
    assert groups_rows["rule"].tolist() == ["stop_empty"]
    assert groups_rows["updated_at"].tolist() == [leave_ts]
    assert (groups_rows["group_state"].tolist(), groups_rows["members"].tolist()) == (["Empty"], [0])
    assert groups_rows["reason"][0].startswith("STOP: group empty for 1 cycles since ")
    assert "(the commit log recorded its last member leaving)" in groups_rows["reason"][0]
    assert not partitions  # lag_1m rows stay those of the observations

    # The next cycle's describe says Empty too: still STOP, now as of that cycle.
    next_ts = T0 + 3 * CYCLE_MS
    labels = {"source": "admin", "group_id": "g", "topic": "t", "partition": 0}
    rows = [
        parsed_sample(next_ts, "consumer_group_state", "gauge", 1, source="admin", group_id="g"),
        parsed_sample(next_ts, "consumer_group_members", "gauge", 0, source="admin", group_id="g"),
        parsed_sample(next_ts, "committed_offset", "counter", 102, **labels),
        parsed_sample(next_ts, "consumer_lag", "gauge", 60, **labels),
    ]
    _, after = step.update_lag(operator_frame(rows), groups, memberships, config, 0)
    assert (after["status"].tolist(), after["updated_at"].tolist()) == (["STOP"], [next_ts])


def test_a_member_joining_again_ends_the_logged_empty_run():
    groups: dict = {}
    memberships: dict = {}
    config = LagConfig()
    step.update_lag(operator_frame(cycles(3, 100, 50)), groups, memberships, config, 0)
    leave_ts = T0 + 2 * CYCLE_MS + 4_000
    step.update_lag(operator_frame(left(leave_ts, 102)), groups, memberships, config, 0)
    back = [
        parsed_sample(leave_ts + 2_000, "consumer_group_state", "gauge", 2, source="commitlog", group_id="g"),
        parsed_sample(leave_ts + 2_000, "consumer_group_members", "gauge", 1, source="commitlog", group_id="g"),
    ]
    _, rows = step.update_lag(operator_frame(back), groups, memberships, config, 0)
    assert rows["status"].tolist() == ["OK"] and rows["members"].tolist() == [1]
