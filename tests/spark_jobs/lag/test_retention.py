"""The retention margin as a spec: what the broker will really delete, and when there is no margin.

Each case is a topic's settings (cleanup.policy code, retention.ms, retention.bytes) and one
partition's newest observation; the expected margins are worked out by hand from the module's
definition (docs/rollups.md, "Retention margin").
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from lagwatch.config import LagConfig
from lagwatch.vocabulary import CLEANUP_POLICY_CODE, GROUP_LOG_START_METRIC, GROUP_SIZE_METRIC
from spark_jobs import route
from spark_jobs.lag import retention, step
from spark_jobs.lag.retention import Margin, PartitionFacts, RecordAge, TopicLimits, margin
from spark_jobs.lag.time_lag import committed_record_age
from tests.spark_jobs.conftest import parsed_sample

DELETE, COMPACT, BOTH = (CLEANUP_POLICY_CODE[p] for p in ("delete", "compact", "compact,delete"))
WEEK_MS = 7 * 86_400_000


def facts(lag: int = 500, age_s: float = 120.0, size: float | None = None, rate: float | None = 10.0) -> PartitionFacts:
    """A partition with records 0..1000 (log start 0), committed at 1000 − lag, its record age_s old."""
    return PartitionFacts(1000 - lag, lag, 0, rate, RecordAge(age_s), size)


def test_a_young_topic_with_a_week_of_retention_has_a_week_less_the_committed_records_age():
    found = margin(TopicLimits(DELETE, WEEK_MS, -1), facts(age_s=181.0))
    assert found == Margin(
        WEEK_MS / 1000 - 181.0,
        "time",
        "time limit nearer: retention.ms 604800000 (168h00m); the committed record is 3m01s old",
    )


def test_time_nearer_than_size_names_the_time_limit():
    # 1,000 records in 100 kB: 100 B each. retention.bytes 1 MB keeps 10,000 records; 500 behind,
    # 9,500 × 100 B to go at 10 records/s = 950 s. retention.ms 60 s − 20 s old = 40 s: nearer.
    found = margin(TopicLimits(DELETE, 60_000, 1_000_000), facts(age_s=20.0, size=100_000.0))
    assert (found.seconds, found.limit) == (40.0, "time")


def test_bytes_nearer_than_time_is_the_size_margin_at_the_produce_rate_in_bytes():
    found = margin(TopicLimits(DELETE, WEEK_MS, 1_000_000), facts(age_s=20.0, size=100_000.0))
    assert found.limit == "size"
    assert found.seconds == pytest.approx((1_000_000 - 500 * 100) / (10.0 * 100))
    assert found.reason.startswith("size limit nearer: retention.bytes 1000000 per partition, 500 records behind")


def test_more_unread_bytes_than_retention_bytes_keeps_is_no_time_left():
    found = margin(TopicLimits(DELETE, -1, 40_000), facts(lag=500, size=100_000.0))
    assert (found.seconds, found.limit) == (0.0, "size")


def test_a_size_limit_with_nothing_produced_never_reaches_the_commit_so_time_decides():
    found = margin(TopicLimits(DELETE, 3_600_000, 1_000_000), facts(age_s=600.0, size=100_000.0, rate=0.0))
    assert (found.seconds, found.limit) == (3000.0, "time")


def test_compacted_only_topic_has_no_margin():
    found = margin(TopicLimits(COMPACT, 60_000, 1_000), facts(age_s=3600.0, size=1e9))
    assert (found.seconds, found.limit) == (None, None)
    assert found.reason == "no margin: cleanup.policy=compact, retention never deletes on this topic"


def test_compact_and_delete_is_judged_by_its_limits():
    assert margin(TopicLimits(BOTH, 60_000, -1), facts(age_s=15.0)).seconds == 45.0


def test_infinite_retention_has_no_margin():
    found = margin(TopicLimits(DELETE, -1, -1), facts(age_s=10 * 86_400.0, size=1e12))
    assert (found.seconds, found.limit) == (None, None)
    assert found.reason.startswith("no margin: retention.ms = -1 and retention.bytes = -1")


def test_a_caught_up_partition_has_nothing_to_lose():
    found = margin(TopicLimits(DELETE, 60_000, -1), facts(lag=0, age_s=0.0))
    assert (found.seconds, found.reason) == (None, "no margin: caught up, nothing unread for retention to delete")


def test_records_already_deleted_unread_is_zero_whatever_the_settings():
    found = margin(None, PartitionFacts(100, 50, 130, 1.0, RecordAge(5.0)))
    assert (found.seconds, found.reason) == (0.0, "passed: retention deleted 30 records the group never read")


def test_without_settings_or_age_there_is_no_margin_never_a_guess():
    assert margin(None, facts()).seconds is None
    assert margin(None, facts()).reason == "no margin: the topic's retention settings were not read yet"
    no_age = PartitionFacts(500, 500, 0, 10.0, None)
    unknown = margin(TopicLimits(DELETE, 60_000, 1_000), no_age)
    assert (unknown.seconds, unknown.limit) == (None, None)
    assert unknown.reason == (
        "no margin: the committed record's age is unknown (no log-end history yet); the partition size is unknown"
    )


def test_an_age_known_only_as_a_lower_bound_gives_the_most_the_margin_can_be():
    found = margin(TopicLimits(DELETE, 60_000, -1), PartitionFacts(500, 500, 0, 10.0, RecordAge(25.0, at_least=True)))
    assert (found.seconds, found.limit) == (35.0, "time")
    assert "at least 25s old" in found.reason and "at most" in found.reason


def test_the_committed_records_age_is_when_the_log_end_passed_it():
    history_ts, history_end = [0, 10_000, 20_000], [100, 200, 300]
    assert committed_record_age(history_ts, history_end, 150, 150, 20_000) == RecordAge(15.0)
    assert committed_record_age(history_ts, history_end, 300, 0, 20_000) == RecordAge(0.0)
    # Two points are enough for the age, fewer than min_history_points the time lag wants.
    assert committed_record_age([0, 10_000], [100, 200], 150, 50, 30_000) == RecordAge(25.0)
    assert committed_record_age(history_ts, history_end, 50, 250, 20_000) == RecordAge(20.0, at_least=True)
    assert committed_record_age([], [], 50, 250, 20_000) is None


def _settings_rows(rows: list[tuple[str, str, int, float]]) -> pd.DataFrame:
    keys = [json.dumps(["c", "admin", metric, "gauge", None, topic, None, None, None]) for topic, metric, _, _ in rows]
    return pd.DataFrame({"sid": 0, "ts": [r[2] for r in rows], "value": [r[3] for r in rows], "series_key": keys})


def test_each_bucket_keeps_the_newest_reading_of_each_setting_and_forgets_deleted_topics():
    state = retention.TopicSettings()
    retention.fold(state, _settings_rows([
        ("t", "topic_cleanup_policy", 1_000, DELETE), ("t", "topic_retention_ms", 1_000, 60_000),
        ("t", "topic_retention_bytes", 1_000, -1), ("gone", "topic_retention_ms", 1_000, 5),
    ]))  # fmt: skip
    retention.fold(state, _settings_rows([("t", "topic_retention_ms", 500, 1), ("t", "topic_retention_ms", 2_000, 7)]))
    assert state.limits("c", "t") == TopicLimits(DELETE, 7, -1)
    assert state.limits("c", "never") is None
    retention.fold(state, _settings_rows([("t", "topic_retention_ms", 2_000 + retention.KEEP_MS, 9)]))
    assert state.limits("c", "gone") is None
    assert retention.decode(retention.encode(state)).limits("c", "t") == TopicLimits(None, 9, None)


def test_the_collectors_size_sample_reaches_the_margin_through_the_lag_step():
    """The admin cycle's samples of a stopped group on a size-limited topic, routed as the job
    routes them: the size (100 B per record) makes the size limit nearer than the week."""
    labels = {"source": "admin", "group_id": "g", "topic": "t", "partition": 0}
    rows = []
    for cycle, end in enumerate((300, 450, 600, 750)):  # 10 records/s, committed stays at 100
        ts = 1_767_261_720_000 + cycle * 15_000
        rows += [
            parsed_sample(ts, "committed_offset", "counter", 100, **labels),
            parsed_sample(ts, "consumer_lag", "gauge", end - 100, **labels),
            parsed_sample(ts, GROUP_LOG_START_METRIC, "gauge", 0, **labels),
            parsed_sample(ts, GROUP_SIZE_METRIC, "gauge", end * 100, **labels),
        ]
    for row in rows:
        del row["event_time"]
    operator, _ = route.operator_rows(pa.Table.from_pylist(rows), None, lag_routing=True)
    frame = operator.to_pandas()
    settings = retention.TopicSettings()
    limits = {"topic_cleanup_policy": DELETE, "topic_retention_ms": WEEK_MS, "topic_retention_bytes": 100_000}
    settings.readings.update({("test", "t", metric): (0, value) for metric, value in limits.items()})
    groups: dict = {}
    lag_rows, _ = step.update_lag(frame[frame["role"] == route.LAG], groups, {}, LagConfig(), 0, settings=settings)
    # 100,000 B kept, 650 unread records × 100 B: 35,000 B more at 10 records/s × 100 B/s.
    assert (lag_rows["retention_limit"][-1], lag_rows["retention_margin_s"][-1]) == ("size", 35.0)
    assert lag_rows["retention_reason"][-1] == (
        "size limit nearer: retention.bytes 100000 per partition, 650 records behind the committed offset, "
        "10 records/s: 35s"
    )
    assert groups[("test", "g")][("t", 0)].size_bytes == 75_000
