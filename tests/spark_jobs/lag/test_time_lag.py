"""Time lag interpolation over the log-end history, rates and ETA."""

from __future__ import annotations

import math
import random

import pytest

from lagwatch.config import LagConfig
from spark_jobs.lag.rules import Thresholds
from spark_jobs.lag.time_lag import append_history, interpolate_time_lag
from spark_jobs.lag.tracker import PartitionTracker
from tests.spark_jobs.lag.judging import PERIOD_MS, judged, track


def test_steady_production_interpolates_time_lag_and_eta():
    # End offsets 1000, 1150, 1300 (10 records/s); the consumer gains 10 records per 15 s.
    report = track([(0, 900, 100), (15, 1060, 90), (30, 1220, 80)])
    # 1220 lies between (15 s, 1150) and (30 s, 1300): reached at 15 + 70/150·15 = 22 s → 8 s ago.
    assert (report.time_lag_s, report.time_lag_method) == (8.0, "interpolated")
    assert report.consume_rate == pytest.approx(320 / 30, rel=1e-12)
    assert report.produce_rate == pytest.approx(10.0, rel=1e-12)
    assert report.eta_s == pytest.approx(80 / (320 / 30 - 10.0), rel=1e-12)
    assert report.rate_span_s == 30.0
    assert (report.status, report.rule, report.reason) == ("OK", "ok", "OK: lag 80, no rule matched")


def test_too_short_history_is_unknown_with_reason():
    report = track([(0, 100, 50)])
    assert (report.time_lag_s, report.time_lag_method) == (None, "unknown")
    assert report.reason == "OK: lag 50, no rule matched; time lag unknown: 1 log-end point(s), need 2"
    assert (report.consume_rate, report.produce_rate, report.eta_s, report.rate_span_s) == (None, None, None, 0.0)


def test_committed_offset_older_than_history_is_a_lower_bound_from_the_oldest_reading_above_it():
    # Committed 200 first seen at 15 s, but the log end was already 1000 ≥ 200 at 0 s: at least 15 s.
    report = track([(0, 100, 900), (15, 200, 950)])
    assert (report.time_lag_s, report.time_lag_method) == (15.0, "commit_age_lower_bound")
    assert report.reason.endswith(
        "time lag ≥ 15s (lower bound: offset 200 existed by 00:00:00; not interpolated: "
        "committed offset 200 is older than the log-end history (oldest point 1000 at 00:00:00))"
    )


def test_a_stopped_consumer_gets_the_age_of_its_commit_as_a_lower_bound():
    # Issue 27: a STOP group 2,250 messages behind, producers idle too (a flat log-end history):
    # nothing to interpolate, yet its commit is 3m26s old, so it is at least that far behind.
    seconds = [*range(0, 200, 15), 206]
    report = track([(t, 1000, 2250) for t in seconds], LagConfig(window_s=600, stop_after_s=60))
    assert (report.status, report.lag) == ("STOP", 2250)
    assert (report.time_lag_s, report.time_lag_method) == (206.0, "commit_age_lower_bound")
    assert "time lag ≥ 3m26s (lower bound: offset 1000 existed by 00:00:00" in report.reason


def test_the_commit_log_dates_the_commit_before_the_first_observation():
    # The commit log saw offset 500 committed at 20 s (an earlier commit of 400 says nothing about 500);
    # the first observation at 60 s cannot interpolate (one point), but 500 existed by 20 s.
    report = judged([(60, 500, 50)], None, commits=[(10, 400), (20, 500)])
    assert (report.time_lag_s, report.time_lag_method) == (40.0, "commit_age_lower_bound")
    assert "offset 500 existed by 00:00:20; not interpolated: 1 log-end point(s), need 2" in report.reason


def test_history_compresses_flat_runs_resets_on_truncation_and_stays_bounded():
    ts: list[int] = []
    end: list[int] = []
    for t, e in [(1, 10), (2, 10), (3, 10), (4, 10), (5, 20)]:
        append_history(ts, end, t, e, max_points=100)
    assert (ts, end) == ([1, 4, 5], [10, 10, 20])
    append_history(ts, end, 6, 5, max_points=100)  # end went back: partition recreated
    assert (ts, end) == ([6], [5])
    for t in range(7, 300):
        append_history(ts, end, t, t * 10, max_points=8)
    assert len(ts) <= 8
    assert ts[-1] == 299 and ts[0] == 6  # recent point exact, oldest point kept: history still reaches back
    assert end == sorted(end)


def test_time_lag_is_never_nan_or_infinite():
    rng = random.Random(7)
    for _ in range(300):
        thresholds = Thresholds.for_group(LagConfig(history_points=6), "g")
        tracker = PartitionTracker()
        committed, end = 0, 0
        for step in range(40):
            end += rng.choice([0, 0, 1, 5, 1000])
            committed = rng.choice([committed, min(end, committed + rng.randint(0, 50)), max(0, committed - 30)])
            tracker.observe(step * 15_000, committed, end - committed, thresholds, PERIOD_MS)
            report = tracker.report(thresholds)
            for number in (report.time_lag_s, report.consume_rate, report.produce_rate, report.eta_s):
                assert number is None or (math.isfinite(number) and number >= 0)
            assert (report.time_lag_s is None) == (report.time_lag_method == "unknown")


def test_interpolation_uses_the_last_point_of_a_flat_run():
    # End stayed at 500 until 40 s, then reached 600 at 50 s: offset 500 existed only after 40 s.
    result = interpolate_time_lag([0, 40_000, 50_000], [500, 500, 600], 500, 100, 50_000, 2)
    assert (result.seconds, result.method) == (10.0, "interpolated")


def test_falling_behind_has_no_eta_not_zero():
    # The producer adds 20 records/s, the consumer commits 10/s: lag grows, no time to catch up.
    report = track([(0, 1000, 100), (15, 1150, 250), (30, 1300, 400)])
    assert (report.consume_rate, report.produce_rate) == (10.0, 20.0)
    assert (report.eta_s, report.rate_span_s) == (None, 30.0)
