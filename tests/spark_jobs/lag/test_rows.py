"""The lag step's rows follow the lake contract by column name: a lag_1m column takes exactly two
places, its declaration in lagwatch/lake.py and the code that computes it."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pyarrow as pa
import pytest

from lagwatch import lake
from lagwatch.config import LagConfig
from spark_jobs import route
from spark_jobs.lag import step, unreachable
from spark_jobs.lag.rules import Outage, Thresholds
from spark_jobs.lag.tracker import PartitionReport, PartitionTracker
from tests.spark_jobs.conftest import parsed_sample

T0 = 1_767_261_720_000


def lag_frame() -> Any:
    """One group's lag pairs, owners and state over two cycles, as the operator gets them."""
    rows = []
    labels = {"source": "admin", "group_id": "g", "topic": "t"}
    for cycle in range(2):
        ts = T0 + cycle * 15_000
        rows.append(parsed_sample(ts, "consumer_group_state", "gauge", 2, source="admin", group_id="g"))
        rows.append(parsed_sample(ts, "consumer_group_members", "gauge", 1, source="admin", group_id="g"))
        for partition in range(2):
            rows.append(parsed_sample(ts, "committed_offset", "counter", 100 + cycle, partition=partition, **labels))
            rows.append(parsed_sample(ts, "consumer_lag", "gauge", 5, partition=partition, **labels))
            owner = {"client_id": "c1", "member_id": "c1-1", "host": "/10.0.0.1"}
            rows.append(parsed_sample(ts, "partition_assigned", "gauge", 1, partition=partition, **labels, **owner))
    return operator_frame(rows)


def operator_frame(rows: list[dict[str, Any]]) -> Any:
    """Parsed samples as the lag step gets them: routed, the metric-window rows left out."""
    for row in rows:
        del row["event_time"]
    operator, _ = route.operator_rows(pa.Table.from_pylist(rows), None, lag_routing=True)
    frame = operator.to_pandas()
    return frame[frame["role"] != route.METRIC]


def test_the_lag_step_s_rows_carry_exactly_the_declared_columns():
    partition_rows, group_rows = step.update_lag(lag_frame(), {}, {}, LagConfig(), 0)
    assert tuple(partition_rows) == lake.written_columns("lag_1m")
    assert tuple(group_rows) == lake.written_columns("group_status")
    assert len(partition_rows["lag"]) == 2 and partition_rows["owner_client_id"].tolist() == ["c1", "c1"]


def test_a_row_missing_a_declared_column_fails_naming_table_and_column():
    row = dict.fromkeys(lake.written_columns("lag_1m"))
    assert tuple(lake.row_columns("lag_1m", [row])) == lake.written_columns("lag_1m")
    del row["rate_span_s"]
    with pytest.raises(ValueError, match=re.escape("lake table 'lag_1m': a row lacks declared column 'rate_span_s'")):
        lake.row_columns("lag_1m", [row])
    with pytest.raises(ValueError, match=re.escape("lake table 'lag_1m': a row has undeclared column(s) ['extra']")):
        lake.row_columns("lag_1m", [dict.fromkeys(lake.written_columns("lag_1m")) | {"extra": 1}])


def test_a_column_declared_but_not_computed_fails_the_lag_step(monkeypatch):
    """A new lag_1m column forgotten in the code that computes it is an error, not a silent NULL."""
    table = lake.TABLES["lag_1m"]
    added = dataclasses.replace(table, columns=(*table.columns[:-1], ("new_figure", "DOUBLE"), table.columns[-1]))
    monkeypatch.setitem(lake.TABLES, "lag_1m", added)
    with pytest.raises(ValueError, match=re.escape("lake table 'lag_1m': a row lacks declared column 'new_figure'")):
        step.update_lag(lag_frame(), {}, {}, LagConfig(), 0)


def test_a_lag_row_is_its_report_s_columns_by_name_plus_its_identity_and_owner():
    """Every PartitionReport field that is a lag_1m column lands in the row under its name, and
    every lag_1m column has a source: a report field or the row's identity and membership."""
    columns = lake.written_columns("lag_1m")
    fields = [field.name for field in dataclasses.fields(PartitionReport)]
    assert set(fields) - set(columns) == {"ts_ms"}, "a report field no lag_1m column declares is never written"
    values = {name: f"<{name}>" for name in fields} | {"ts_ms": T0 + 5_000}
    row = step._partition_row(
        ("c", "g"), ("t", 3), PartitionReport(**values), ("m-1", "client", "/10.0.0.1"), 2, "consumer", "c2 on h2"
    )
    assert sorted(row) == sorted(columns)
    measured = [name for name in fields if name in columns]
    assert {name: row[name] for name in measured} == {name: values[name] for name in measured}
    assert {name: row[name] for name in columns if name not in measured} == {
        "cluster": "c",
        "window_start": T0,
        "window_end": T0 + step.PERIOD_MS,
        "group_id": "g",
        "topic": "t",
        "partition": 3,
        "owner_member_id": "m-1",
        "owner_client_id": "client",
        "owner_host": "/10.0.0.1",
        "owner_changes": 2,
        "owner_pending": "c2 on h2",
        "group_type": "consumer",
    }


def test_an_err_row_has_every_lag_1m_column_and_nulls_all_but_its_identity_and_verdict():
    """PARTITION_UNMEASURED follows the lake contract: the ERR row of an unreachable cluster has
    every declared column, NULL wherever it has no current value (every measured one among them)."""
    thresholds = Thresholds.for_group(LagConfig(), "g")
    track = PartitionTracker()
    track.observe(T0, 100, 5, thresholds, step.PERIOD_MS)
    outage = Outage("c", since_ms=T0 + 15_000, at_ms=T0 + 15_000)
    row = unreachable._partition_row(("c", "g"), ("t", 0), track, outage, thresholds, (T0, step.PERIOD_MS), None)
    assert sorted(row) == sorted(lake.written_columns("lag_1m"))
    assert {name for name, value in row.items() if value is not None} <= set(unreachable.PARTITION_KNOWN)
    assert (row["status"], row["rule"], row["time_lag_method"]) == ("ERR", "unreachable", "unknown")
    assert {"lag", "committed_offset", "rate_span_s", "owner_member_id"} <= set(unreachable.PARTITION_UNMEASURED)


def test_a_group_state_from_the_log_a_window_after_its_last_lag_writes_no_group_row():
    """The commit log tells a group's state change long after its last lag observation: no
    partition is in the window to summarize, so the batch writes no group row, and goes on."""
    groups: dict = {}
    memberships: dict = {}
    step.update_lag(lag_frame(), groups, memberships, LagConfig(), 0)
    late = T0 + LagConfig().window_ms + 60_000
    state = parsed_sample(late, "consumer_group_state", "gauge", 1, source="commitlog", group_id="g")
    partition_rows, group_rows = step.update_lag(operator_frame([state]), groups, memberships, LagConfig(), 0)
    assert len(group_rows.get("status", [])) == 0 and len(partition_rows.get("status", [])) == 0
    assert any(key[1] == "g" for key in groups)  # the group is still tracked


def test_an_owner_change_read_between_two_minutes_counts_in_the_later_minute_s_row():
    """The commit log reads a change at its record's time, which may fall after a minute's last
    observation: the next minute's row counts it (each row from where the one before stopped)."""
    labels = {"group_id": "g", "topic": "t", "partition": 0}
    a, b = ({"client_id": c, "member_id": f"{c}-1", "host": "/10.0.0.1"} for c in ("a", "b"))
    rows = []
    for seconds, source, owner in ((45, "admin", a), (55, "commitlog", b), (70, "admin", b)):
        ts = T0 + seconds * 1000
        rows.append(parsed_sample(ts, "partition_assigned", "gauge", 1, source=source, **labels, **owner))
        if source == "admin":
            rows.append(parsed_sample(ts, "committed_offset", "counter", 100 + seconds, source=source, **labels))
            rows.append(parsed_sample(ts, "consumer_lag", "gauge", 5, source=source, **labels))
    partition_rows, _ = step.update_lag(operator_frame(rows), {}, {}, LagConfig(), 0)
    minutes, changes = partition_rows["window_start"].tolist(), partition_rows["owner_changes"].tolist()
    by_minute = dict(zip(minutes, changes, strict=True))
    assert by_minute == {T0: 0, T0 + step.PERIOD_MS: 1}
    assert partition_rows["owner_client_id"].tolist() == ["a", "b"]
