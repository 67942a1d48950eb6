"""Rebalances per window: every increase of the coordinator's count (generation or epoch), the
cycle-based count without it, and the seconds spent rebalancing from the state readings."""

from __future__ import annotations

import pickle

import pytest

from lagwatch.membership import GROUP_MEMBERS_METRIC, GROUP_STATE_CODE, GROUP_STATE_METRIC, REBALANCES_METRIC
from spark_jobs.lag import membership, rebalances
from spark_jobs.lag.reasons import group as group_reason
from spark_jobs.lag.reasons import rebalance_storm

KEEP_MS = 600_000
STABLE, PREPARING, ASSIGNING = (GROUP_STATE_CODE[s] for s in ("Stable", "PreparingRebalance", "Assigning"))


def test_every_increase_in_the_window_counts_even_several_between_two_readings():
    timelines = rebalances.empty()
    for ts, generation in ((1_000, 3), (5_000, 4), (6_000, 7), (9_000, 8)):
        rebalances.observe_count(timelines, ts, generation, KEEP_MS)
    assert rebalances.count(timelines, 0, 10_000) == 5  # the first reading is the baseline
    assert rebalances.count(timelines, 5_500, 10_000) == 4  # 4→7 then 7→8, measured from the reading before
    assert rebalances.count(timelines, 9_500, 10_000) == 0


def test_a_group_made_again_counts_its_new_generation_and_a_late_reading_fits_in_order():
    timelines = rebalances.empty()
    for ts, generation in ((1_000, 9), (4_000, 2), (3_000, 10)):  # deleted after 10, made again: generation 2
        rebalances.observe_count(timelines, ts, generation, KEEP_MS)
    assert rebalances.count(timelines, 0, 5_000) == 1 + 2


def test_without_a_count_reading_the_caller_falls_back_to_collector_cycles():
    group = membership.GroupMembership()
    assert rebalances.count(group.rebalancing, 0, 10_000) is None
    group.observe_group(1_000, GROUP_MEMBERS_METRIC, 1, KEEP_MS)
    group.observe_group(2_000, GROUP_MEMBERS_METRIC, 2, KEEP_MS)
    group.observe_group(3_000, GROUP_STATE_METRIC, PREPARING, KEEP_MS)
    assert group.rebalances(0, 10_000) == 2  # cycles: the member count changed, then PreparingRebalance
    group.observe_group(3_500, REBALANCES_METRIC, 4, KEEP_MS, from_log=True)
    group.observe_group(3_600, REBALANCES_METRIC, 7, KEEP_MS, from_log=True)
    assert group.rebalances(0, 10_000) == 3  # the log's count wins once the group has one


def test_seconds_rebalancing_run_from_a_rebalancing_reading_to_the_next_other_one():
    group = membership.GroupMembership()
    for ts, state in ((1_000, STABLE), (2_000, PREPARING), (3_000, PREPARING), (5_000, STABLE), (8_000, ASSIGNING)):
        group.observe_group(ts, GROUP_STATE_METRIC, state, KEEP_MS)
    assert group.rebalancing_s(0, 10_000) == pytest.approx(3.0 + 2.0)  # 2–5 s, then 8 s to the window's end
    assert group.rebalancing_s(4_000, 9_000) == pytest.approx(1.0 + 1.0)
    assert group.rebalancing_s(5_000, 7_000) == 0.0


def test_old_readings_go_but_the_one_before_the_window_stays_as_its_baseline():
    timelines = rebalances.empty()
    for ts, generation in ((0, 1), (10_000, 2), (700_000, 3), (701_000, 5)):
        rebalances.observe_count(timelines, ts, generation, KEEP_MS)
    assert [ts for ts, _ in timelines[0]] == [10_000, 700_000, 701_000]
    assert rebalances.count(timelines, 101_000, 701_000) == 3


def test_the_state_survives_a_checkpoint_and_older_state_loads_without_timelines():
    group = membership.GroupMembership()
    group.observe_group(1_000, REBALANCES_METRIC, 2, KEEP_MS)
    group.observe_group(2_000, REBALANCES_METRIC, 5, KEEP_MS)
    restored = membership.decode(membership.encode({("c", "g"): group}))[("c", "g")]
    assert restored.rebalances(0, 3_000) == 3
    old = membership.GroupMembership()
    blob = pickle.dumps({("c", "g"): (old.owners, old.group, old.pending)})
    assert membership.decode(blob)[("c", "g")].rebalancing == rebalances.empty()


def test_a_storm_is_named_instead_of_the_window_s_count():
    storm = group_reason("lag rising", ("t", 0), None, 0, 1, None, 7, 300, None, storm=rebalance_storm(7, 600))
    assert storm.endswith("; rebalance storm: 7 rebalances in 10m")
    calm = group_reason("lag rising", ("t", 0), None, 0, 1, None, 2, 300, None)
    assert calm.endswith("; 2 rebalances in 5m")
