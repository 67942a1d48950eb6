"""A partition's streaming state: duplicates, the minute's lag max, commits and waiting halves."""

from __future__ import annotations

import pickle

from lagwatch.config import LagConfig
from lagwatch.vocabulary import CLEANUP_POLICY_CODE
from spark_jobs.lag import step
from spark_jobs.lag.retention import TopicLimits
from spark_jobs.lag.rules import Thresholds
from spark_jobs.lag.tracker import MAX_WAITING_HALVES, PartitionTracker
from tests.spark_jobs.lag.judging import PERIOD_MS, track


def test_duplicate_and_out_of_order_observations_are_ignored():
    thresholds = Thresholds.for_group(LagConfig(), "g")
    tracker = PartitionTracker()
    assert tracker.observe(15_000, 100, 10, thresholds, PERIOD_MS)
    assert not tracker.observe(15_000, 100, 10, thresholds, PERIOD_MS)
    assert not tracker.observe(5_000, 90, 10, thresholds, PERIOD_MS)
    assert tracker.window_ts == [15_000]


def test_lag_max_is_per_one_minute_window():
    report = track([(50, 100, 70), (55, 110, 90), (65, 120, 40), (70, 130, 30)])
    assert (report.lag, report.lag_max) == (30, 40)


def test_commits_read_twice_or_late_are_placed_in_time_order():
    thresholds = Thresholds.for_group(LagConfig(window_s=60), "g")
    tracker = PartitionTracker()
    assert tracker.commit(10_000, 5, thresholds)
    assert not tracker.commit(10_000, 5, thresholds)  # the same commit read again
    assert tracker.commit(4_000, 3, thresholds)  # late, still within the window
    assert tracker.observe(100_000, 5, 1, thresholds, PERIOD_MS)
    assert not tracker.commit(30_000, 4, thresholds)  # older than the window
    assert (tracker.commit_ts, tracker.commit_offset) == ([10_000], [5])  # the newest is always kept
    restored = PartitionTracker.from_state(tracker.to_state())
    assert (restored.commit_ts, restored.commit_offset) == ([10_000], [5])
    assert PartitionTracker.from_state(tracker.to_state()[:8]).commit_ts == []  # state saved before commits


def test_a_half_observation_waits_for_its_partner_bounded():
    tracker = PartitionTracker()
    for ts in range(1, 21):  # 20 committed halves whose lag never comes
        tracker.wait_half(ts * 1000, False, 100.0 + ts, keep_ms=60_000)
    assert len(tracker.waiting_halves) == MAX_WAITING_HALVES
    assert tracker.take_half(20_000, True) is None  # wrong kind
    assert tracker.take_half(20_000, False) == 120.0 and tracker.take_half(20_000, False) is None
    tracker.wait_half(200_000, True, 5.0, keep_ms=60_000)  # older halves fall out of the window
    assert tracker.waiting_halves == [(200_000, True, 5.0)]
    assert PartitionTracker.from_state(tracker.to_state()).waiting_halves == [(200_000, True, 5.0)]
    assert tracker.last_seen_ms == 200_000  # a waiting half keeps the partition in the state


#: One partition's state as the checkpoints written before partition sizes hold it: the 14 fields
#: of PartitionTracker.to_state() then (two cycles, committed 100, log ends 300 and 450, log start 0).
STATE_WITHOUT_SIZE = (
    [0, 15_000],
    [300, 450],
    [0, 15_000],
    [100, 100],
    [200, 350],
    0,
    0,
    350,
    [],
    [],
    -1,
    [],
    15_000,
    0,
)


def test_a_checkpoint_written_before_sizes_resumes_and_takes_sizes_from_then_on():
    thresholds = Thresholds.for_group(LagConfig(window_s=600), "g")
    blob = pickle.dumps({("c", "g"): {("t", 0): STATE_WITHOUT_SIZE}}, protocol=pickle.HIGHEST_PROTOCOL)
    restored = step.decode_groups(blob)[("c", "g")][("t", 0)]
    assert (restored.window_committed, restored.log_start_offset, restored.size_ts_ms) == ([100, 100], 0, -1)
    size_only = TopicLimits(CLEANUP_POLICY_CODE["delete"], -1, 100_000)
    assert restored.report(thresholds, limits=size_only).retention_reason == "no margin: the partition size is unknown"

    restored.see_size(15_000, 45_000)  # 100 bytes per record of the 450 in the log
    restored.see_size(10_000, 1)  # an older reading, read late: ignored
    report = restored.report(thresholds, limits=size_only)
    # 100,000 B kept, 350 unread records × 100 B: 65,000 B more at 10 records/s × 100 B/s.
    assert (report.retention_limit, report.retention_margin_s) == ("size", 65.0)
    assert report.retention_reason.startswith("size limit nearer: retention.bytes 100000 per partition, 350 records")
    again = step.decode_groups(step.encode_groups({("c", "g"): {("t", 0): restored}}))[("c", "g")][("t", 0)]
    assert (again.size_ts_ms, again.size_bytes) == (15_000, 45_000)
