"""A group's status and reason from its partitions' reports."""

from __future__ import annotations

from lagwatch.config import LagConfig
from spark_jobs.lag.group import GroupFacts, summarize_group
from tests.spark_jobs.lag.judging import OWNED, judged, track


def test_group_takes_its_worst_partition():
    stop = track([(minute * 60, 500, 100) for minute in range(12)])
    ok = track([(0, 100, 0)])
    warn = track([(0, 100, 10), (15, 200, 20), (30, 300, 30)], LagConfig(window_s=60))
    summary = summarize_group([("t2", 0, ok), ("t1", 1, stop), ("t1", 0, warn)])
    assert (summary.status, summary.rule) == ("STOP", "stop")
    assert summary.reason == f"{stop.reason} [t1/1]; 2 of 3 partitions not OK; hot partition t1/1 has 77% of the lag"
    assert (summary.total_lag, summary.max_lag, summary.partitions, summary.topics) == (130, 100, 3, "t1,t2")
    assert summary.max_time_lag_s == max(r.time_lag_s for r in (stop, ok, warn) if r.time_lag_s is not None)
    assert stop.time_lag_method == "commit_age_lower_bound"
    assert summary.max_time_lag_method == "commit_age_lower_bound"  # the group's maximum is a floor too


def test_the_group_time_lag_method_is_the_weakest_its_partitions_give():
    interpolated = track([(0, 900, 100), (15, 1060, 90), (30, 1220, 80)])
    caught_up = track([(0, 100, 0)])
    first_seen = track([(0, 100, 50)])  # one observation, no older evidence: unknown
    assert (interpolated.time_lag_method, first_seen.time_lag_method) == ("interpolated", "unknown")
    both = summarize_group([("t", 0, interpolated), ("t", 1, caught_up), ("t", 2, first_seen)])
    assert (both.max_time_lag_s, both.max_time_lag_method) == (interpolated.time_lag_s, "interpolated")
    alone = summarize_group([("t", 2, first_seen)])
    assert (alone.max_time_lag_s, alone.max_time_lag_method) == (None, "unknown")


def test_the_group_reason_names_owner_hot_partition_and_rebalances():
    stalled = judged([(0, 100, 900), (15, 100, 910)], OWNED)
    quiet = judged([(0, 100, 10), (15, 110, 10)], OWNED)
    facts = GroupFacts(
        owner_of={("t", 0): "app-1 on /10.0.0.1", ("t", 1): "app-2 on /10.0.0.2"}.get, rebalances=3, window_s=300
    )
    summary = summarize_group([("t", 0, stalled), ("t", 1, quiet), ("t", 2, quiet)], facts)
    assert summary.status == "STALL"
    assert summary.reason == (
        f"{stalled.reason} [t/0]; 1 of 3 partitions not OK; hot partition t/0 has 98% of the lag; 3 rebalances in 5m"
    )
    ok = summarize_group([("t", 1, quiet), ("t", 2, quiet)], facts)
    assert ok.reason == "OK: lag 10, no rule matched [t/1, owner app-2 on /10.0.0.2]; 3 rebalances in 5m"
