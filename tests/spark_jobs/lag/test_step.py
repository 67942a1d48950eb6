"""lag_1m and group_status through a real local[2] Spark stream (the job's full rollups operator).

Three micro-batches: partition t/0 of g1 consumes steadily (interpolated time lag, rates, ETA),
t/1 stops moving and turns STALL in the last batch — arriving alone, so the group's status must
come from state, not from that batch — and g2 crosses its configured warn_lag.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from lagwatch.config import LagConfig
from lagwatch.lake import TABLES
from spark_jobs.lag.pairing import pair_observations
from tests.spark_jobs.conftest import newest_by_key, parsed_sample, run_rollups

TABLES_UNDER_TEST = ("metrics_10s", "metrics_1m", "lag_1m", "group_status")
LAG_CONFIG = LagConfig(window_s=600, group_thresholds={"g2": {"warn_lag": 50}})


def offsets(ts_s: int, group: str, partition: int, committed: int, lag: int) -> list[dict]:
    """The admin collector's pair for one partition and cycle: committed offset and lag, same ts."""
    labels = {"source": "admin", "group_id": group, "topic": "t", "partition": partition}
    return [
        parsed_sample(ts_s * 1000, "committed_offset", "gauge", committed, **labels),
        parsed_sample(ts_s * 1000, "consumer_lag", "gauge", lag, **labels),
    ]


def log_starts(*points: tuple[int, int]) -> list[dict]:
    """The admin collector's log_start_offset gauge of partition t/0 at (ts_s, offset) points."""
    return [
        parsed_sample(ts_s * 1000, "log_start_offset", "gauge", start, source="admin", topic="t", partition=0)
        for ts_s, start in points
    ]


BATCHES = [
    [
        *offsets(0, "g1", 0, 900, 100),
        *offsets(15, "g1", 0, 1060, 90),
        *offsets(0, "g1", 1, 500, 100),
        *offsets(15, "g1", 1, 500, 100),
        *offsets(0, "g2", 0, 100, 60),
        *offsets(15, "g2", 0, 200, 60),
        # A committed offset without its lag partner is not an observation.
        parsed_sample(15_000, "committed_offset", "gauge", 7, source="admin", group_id="g1", topic="t", partition=2),
        parsed_sample(15_000, "messages_in_total", "counter", 5, broker="1"),
        *log_starts((0, 40), (15, 55)),
    ],
    [*offsets(30, "g1", 0, 1220, 80), *log_starts((30, 70))],
    [*offsets(30, "g1", 1, 500, 110), *offsets(30, "g1", 0, 1220, 80)],  # t/0 again: a duplicate
]


@pytest.fixture(scope="module")
def emitted(spark, tmp_path_factory) -> dict[str, list[list]]:
    return run_rollups(spark, tmp_path_factory.mktemp("lag"), BATCHES, LAG_CONFIG, TABLES_UNDER_TEST)


def lag_row(rows: list, group: str, partition: int):
    (row,) = [r for r in rows if r.group_id == group and r.partition == partition]
    return row


def measured(row) -> tuple:
    return (row.committed_offset, row.end_offset, row.lag, row.lag_max, row.time_lag_s, row.time_lag_method)


def test_lag_rows_have_the_lake_columns(emitted):
    expected = [name for name in TABLES["lag_1m"].column_names if name != "version"]
    assert list(emitted["lag_1m"][0][0].asDict()) == expected
    expected = [name for name in TABLES["group_status"].column_names if name != "version"]
    assert list(emitted["group_status"][0][0].asDict()) == expected


def test_steady_consumer_gets_interpolated_time_lag_rates_and_eta(emitted):
    first, second, third = emitted["lag_1m"]
    row = lag_row(first, "g1", 0)
    # Ends 1000, 1150: 1060 was reached at 6 s → 9 s behind at 15 s.
    assert measured(row) == (1060, 1150, 90, 100, 9.0, "interpolated")
    assert row.consume_rate == pytest.approx(160 / 15, rel=1e-12)
    assert row.produce_rate == pytest.approx(10.0, rel=1e-12)
    assert row.eta_s == pytest.approx(90 / (160 / 15 - 10), rel=1e-12)
    assert row.rate_span_s == 15.0  # the ETA's basis: rates over the 15 s between two observations
    assert (row.status, row.rule, row.reason) == ("OK", "ok", "OK: lag 90, no rule matched")
    assert row.window_start == dt.datetime(1970, 1, 1) and row.window_end == dt.datetime(1970, 1, 1, 0, 1)
    again = lag_row(second, "g1", 0)  # the same window, updated by the next batch
    assert measured(again) == (1220, 1300, 80, 100, 8.0, "interpolated")
    assert [r.partition for r in third if r.group_id == "g1"] == [1]  # the duplicate made no row


def test_stall_and_group_status_from_state(emitted):
    stalled = lag_row(emitted["lag_1m"][2], "g1", 1)
    # Not interpolated (500 is below the oldest log end kept), but 500 was committed by 0 s: ≥ 30 s.
    assert measured(stalled) == (500, 610, 110, 110, 30.0, "commit_age_lower_bound")
    assert (stalled.status, stalled.rule) == ("STALL", "stall")
    assert stalled.reason == (
        "STALL: committed offset 500 not moving for 30s (3 observations) while lag is 110, judged by time: "
        "no membership reading; time lag ≥ 30s (lower bound: offset 500 existed by 00:00:00; not interpolated: "
        "committed offset 500 is older than the log-end history (oldest point 600 at 00:00:00))"
    )
    (group,) = emitted["group_status"][2]
    assert (group.group_id, group.status, group.rule) == ("g1", "STALL", "stall")
    assert group.reason == f"{stalled.reason} [t/1]; 1 of 2 partitions not OK"
    assert (group.total_lag, group.max_lag, group.max_time_lag_s, group.partitions, group.topics) == (
        190,
        110,
        30.0,  # t/1's lower bound is above t/0's interpolated 8 s, so the group's maximum is a floor too
        2,
        "t",
    )
    assert group.max_time_lag_method == "commit_age_lower_bound"
    # One row per group and minute; updated_at is the newest observation behind it, never the window's end.
    assert (group.window_start, group.updated_at) == (dt.datetime(1970, 1, 1), dt.datetime(1970, 1, 1, 0, 0, 30))


def test_group_status_per_batch(emitted):
    first, second, _ = emitted["group_status"]
    by_group = {row.group_id: row for row in first}
    assert sorted(by_group) == ["g1", "g2"]  # the unpaired t/2 sample made no partition
    assert (by_group["g1"].status, by_group["g1"].total_lag, by_group["g1"].partitions) == ("OK", 190, 2)
    assert (by_group["g2"].status, by_group["g2"].rule) == ("WARN", "warn_lag")
    assert by_group["g2"].reason == "WARN: lag 60 > warn_lag 50 [t/0]; 1 of 1 partitions not OK"
    (g1,) = second  # only t/0 arrived; t/1's lag 100 still counts
    assert (g1.status, g1.total_lag, g1.max_lag) == ("OK", 180, 100)


def test_lag_samples_also_roll_up_as_metrics(emitted):
    rows = newest_by_key(emitted["metrics_1m"], lambda r: (r.metric, r.group_id, r.partition, r.broker))
    assert rows[("consumer_lag", "g1", 1, None)].last == 110.0
    assert rows[("consumer_lag", "g1", 1, None)].samples == 3
    assert rows[("committed_offset", "g1", 2, None)].samples == 1
    assert rows[("messages_in_total", None, None, "1")].rate_per_s is None


def test_group_partition_series_roll_up_per_minute_only(emitted):
    """lag_1m keeps a group-partition's offsets per minute, so its series skip metrics_10s; a
    partition's own (log start) and a broker's series stay in both tables."""

    def metrics(table: str) -> set:
        return {(r.metric, r.group_id) for batch in emitted[table] for r in batch}

    ten_seconds, minute = metrics("metrics_10s"), metrics("metrics_1m")
    assert {("consumer_lag", "g1"), ("committed_offset", "g2")} <= minute
    assert not {m for m in ten_seconds if m[1] is not None}, "no group series in metrics_10s"
    assert {("log_start_offset", None), ("messages_in_total", None)} <= ten_seconds & minute


def test_log_start_offsets_roll_up_like_any_gauge(emitted):
    def windows(table: str) -> dict:
        rows = newest_by_key(emitted[table], lambda r: (r.metric, r.topic, r.partition, r.window_start))
        return {
            key[3].timestamp(): (row.samples, row.min, row.max, row.last)
            for key, row in rows.items()
            if key[:3] == ("log_start_offset", "t", 0)
        }

    assert windows("metrics_10s") == {0: (1, 40, 40, 40), 10: (1, 55, 55, 55), 30: (1, 70, 70, 70)}
    assert windows("metrics_1m") == {0: (3, 40, 70, 70)}


def test_pairing_needs_both_samples_of_a_cycle():
    import pandas as pd

    def key(metric: str) -> str:  # series_key: the labels as a JSON array in SERIES_COLUMNS order
        return json.dumps(["c", "admin", metric, "gauge", None, "t", "0", "g", None])

    samples = pd.DataFrame(
        [
            {"series_key": key(m), "ts": 1, "value": v}
            for m, v in (("committed_offset", 10.0), ("consumer_lag", 5.0), ("committed_offset", 11.0))
        ]
    )
    samples["pkey"] = 42
    samples.loc[2, "ts"] = 2
    duplicate = samples.iloc[[1]].assign(value=6.0)  # a second lag sample of the same cycle: the last wins
    paired = pair_observations(pd.concat([samples, duplicate], ignore_index=True))
    assert paired[["ts", "committed", "lag"]].values.tolist() == [[1, 10, 6]]
    assert paired[["cluster", "group_id", "topic", "partition"]].values.tolist() == [["c", "g", "t", 0]]


def test_a_cycle_split_across_two_micro_batches_is_still_one_observation(spark, tmp_path):
    # g3 t/0: the 15 s cycle's committed offset ends batch 1, its lag starts batch 2 (a
    # max_rows_per_batch boundary between them). Its lag, 150, is the minute's maximum: only
    # an observation made of the two halves can put it in lag_max.
    committed_15, lag_15 = offsets(15, "g3", 0, 1000, 150)
    batches = [
        [*offsets(0, "g3", 0, 900, 100), committed_15],
        [lag_15, *offsets(30, "g3", 0, 1200, 80)],
    ]
    emitted = run_rollups(spark, tmp_path, batches, LAG_CONFIG, ("lag_1m",))
    rows = [r for batch in emitted["lag_1m"] for r in batch if r.group_id == "g3"]
    newest = max(rows, key=lambda r: (r.committed_offset, r.lag_max))
    assert (newest.committed_offset, newest.lag, newest.lag_max) == (1200, 80, 150)
    assert newest.rate_span_s == 30.0
