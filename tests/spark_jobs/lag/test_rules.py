"""The status rules: Burrow's statuses, membership as evidence, thresholds, the rules table and its doc."""

from __future__ import annotations

import random

import pytest

from lagwatch.config import ConfigError, LagConfig, parse_config
from spark_jobs.lag.retention import TopicLimits
from spark_jobs.lag.rules import Membership, Thresholds
from spark_jobs.lag.tracker import PartitionTracker
from tests.spark_jobs.lag.judging import OWNED, PERIOD_MS, UNOWNED, empty, judged, statuses_with_commits, track


def test_caught_up_is_ok_with_zero_time_lag():
    report = track([(0, 100, 5), (15, 150, 0)])
    assert (report.status, report.rule, report.reason) == ("OK", "caught_up", "OK: caught up (lag 0)")
    assert (report.time_lag_s, report.time_lag_method, report.eta_s) == (0.0, "caught_up", 0.0)
    assert (report.committed_offset, report.end_offset, report.lag, report.lag_max) == (150, 150, 0, 5)


def test_stop_when_the_offset_stands_still_for_longer_than_stop_after_s():
    observations = [(minute * 60, 500, 100 + minute) for minute in range(13)]  # 0 … 12 minutes
    report = track(observations, LagConfig(window_s=600, stop_after_s=600))
    assert (report.status, report.rule) == ("STOP", "stop")
    assert report.reason == (
        "STOP: committed offset unchanged for 12m > stop_after_s 10m (committed offset 500, lag 112), "
        "judged by time: no membership reading; "
        "time lag ≥ 12m (lower bound: offset 500 existed by 00:00:00; not interpolated: "
        "committed offset 500 is older than the log-end history (oldest point 600 at 00:00:00))"
    )
    assert (report.time_lag_s, report.time_lag_method) == (720.0, "commit_age_lower_bound")


def test_stall_when_committed_offset_does_not_move_within_the_window():
    report = track([(0, 500, 100), (15, 500, 100), (30, 500, 100)])
    assert (report.status, report.rule) == ("STALL", "stall")
    assert report.reason.startswith("STALL: committed offset 500 not moving for 30s (3 observations) while lag is 100")


def test_rewind_when_committed_offset_goes_back():
    report = track([(0, 1000, 10), (15, 1100, 10), (30, 600, 520)])
    assert (report.status, report.rule) == ("REWIND", "rewind")
    assert report.reason.startswith("REWIND: committed offset went back from 1100 to 600 at 00:00:30")
    assert report.consume_rate is None  # offsets went back: no meaningful rate


def test_warn_when_lag_rises_across_the_window():
    # A slow rise (9 % of what was produced) is WARN only once it lasted half the window (30 s of 60 s).
    assert track([(0, 100, 10), (15, 200, 20), (30, 300, 30)], LagConfig(window_s=120)).status == "OK"
    report = track([(0, 100, 10), (15, 200, 20), (30, 300, 30)], LagConfig(window_s=60))
    assert (report.status, report.rule) == ("WARN", "lag_rising")
    assert report.reason.startswith("WARN: lag rising from 10 to 30 over 30s (3 observations, 9% of what was produced)")


def test_two_observations_are_not_enough_for_stall_or_warn():
    assert track([(0, 500, 100), (15, 500, 100)]).status == "OK"
    assert track([(0, 100, 10), (15, 200, 20)], LagConfig(window_s=30)).status == "OK"


def test_group_thresholds_name_the_threshold():
    config = LagConfig(
        group_thresholds={"busy": {"warn_lag": 50}, "slow": {"warn_time_lag_s": 5}, "strict": {"stop_after_s": 120}}
    )
    busy = track([(0, 100, 60), (15, 200, 60), (30, 300, 60)], config, "busy")
    assert (busy.status, busy.rule, busy.reason) == ("WARN", "warn_lag", "WARN: lag 60 > warn_lag 50")
    slow = track([(0, 900, 100), (15, 1060, 90), (30, 1220, 80)], config, "slow")
    assert (slow.status, slow.rule, slow.reason) == (
        "WARN",
        "warn_time_lag_s",
        "WARN: time lag 8s > warn_time_lag_s 5s",
    )
    strict = track([(0, 500, 10), (60, 500, 20), (180, 500, 30)], config, "strict")
    assert strict.reason.startswith(
        "STOP: committed offset unchanged for 3m > stop_after_s 2m (committed offset 500, lag 30)"
    )
    other = track([(0, 100, 60), (15, 200, 60), (30, 300, 60)], config, "other-group")
    assert other.status == "OK"


def test_thresholds_come_from_the_defaults_then_the_cluster_then_the_group():
    config = LagConfig(stop_after_s=30, group_thresholds={"tuned": {"warn_lag": 10}})
    cluster_lag = {"warn_lag": 500, "stop_after_s": 90, "warn_time_lag_s": 20}
    plain = Thresholds.for_group(config, "tuned")
    assert (plain.warn_lag, plain.stop_after_s, plain.warn_time_lag_s) == (10, 30, None)
    tuned = Thresholds.for_group(config, "tuned", cluster_lag)
    assert (tuned.warn_lag, tuned.stop_after_s, tuned.warn_time_lag_s) == (10, 90, 20), "the group's own entry wins"
    other = Thresholds.for_group(config, "other", cluster_lag)
    assert (other.warn_lag, other.stop_after_s, other.warn_time_lag_s) == (500, 90, 20)


def test_a_cluster_s_lag_thresholds_judge_its_groups():
    observations = [(0, 100, 60), (15, 200, 60), (30, 300, 60)]
    thresholds = Thresholds.for_group(LagConfig(), "g", {"warn_lag": 50})
    tracker = PartitionTracker()
    for ts_s, committed, lag in observations:
        tracker.observe(ts_s * 1000, committed, lag, thresholds, PERIOD_MS)
    report = tracker.report(thresholds)
    assert (report.status, report.rule, report.reason) == ("WARN", "warn_lag", "WARN: lag 60 > warn_lag 50")
    assert track(observations).status == "OK", "without the cluster's threshold the same partition is OK"


def test_unknown_threshold_key_is_a_config_error():
    with pytest.raises(ConfigError, match="warn_lagg"):
        parse_config({"lag": {"group_thresholds": {"g": {"warn_lagg": 5}}}}, environ={})


def test_a_rewind_undone_between_two_observations_is_rewind_even_when_caught_up():
    reports = statuses_with_commits(
        [(0, 1000, 200), (15, 1200, 0)], [(5, 1000), (7, 500), (9, 1000), (12, 1200)], LagConfig(window_s=60)
    )
    assert [r.status for r in reports] == ["OK", "REWIND"]
    assert reports[-1].reason.startswith("REWIND: a commit went back from 1000 to 500 at 00:00:07")


def test_commits_of_the_same_offset_every_2s_are_stall_and_stay_stall():
    config = LagConfig(window_s=60)
    commits = [(ts, 500) for ts in range(0, 301, 2)]
    reports = statuses_with_commits([(ts, 500, 100) for ts in range(5, 301, 5)], commits, config)
    assert [r.status for r in reports[2:]] == ["STALL"] * (len(reports) - 2)  # 6 s in: 3 commits, enough
    assert reports[-1].reason.startswith("STALL: 30 commits of offset 500 in 58s while lag is 100")
    # Without the commits (OffsetFetch only) the same consumer turns STOP after the window.
    tracker, thresholds = PartitionTracker(), Thresholds.for_group(config, "g")
    for ts in range(5, 301, 5):
        tracker.observe(ts * 1000, 500, 100, thresholds, PERIOD_MS)
    assert tracker.report(thresholds).status == "STOP"


def test_a_consumer_that_stops_committing_is_stop_and_never_stall_on_the_way():
    config = LagConfig(window_s=60, stop_after_s=60)
    commits = [(ts, 500 + ts) for ts in range(0, 31, 2)]  # moving, then silent after 30 s
    reports = statuses_with_commits([(ts, 530, 100) for ts in range(35, 181, 5)], commits, config)
    statuses = [r.status for r in reports]
    assert "STALL" not in statuses
    first_stop = statuses.index("STOP")
    assert reports[first_stop].ts_ms == 95_000  # first observation more than 60 s after the commit at 30 s
    assert set(statuses[first_stop:]) == {"STOP"} and set(statuses[:first_stop]) == {"OK"}
    assert reports[-1].reason.startswith(
        "STOP: no commit for 2m30s > stop_after_s 1m (last commit at 00:00:30, committed offset 530, lag 100)"
    )


def test_caught_up_on_a_quiet_topic_stays_ok_however_long_it_has_not_committed():
    # One commit at 0 s, then two hours of 15 s cycles with no new record: never STOP or STALL.
    config = LagConfig(window_s=60)
    observations = [(ts, 300, 0) for ts in range(15, 7201, 15)]
    with_log = statuses_with_commits(observations, [(0, 300)], config)
    without_log = [track(observations[: i + 1], config) for i in (0, 3, len(observations) - 1)]
    assert {(r.status, r.rule) for r in with_log + without_log} == {("OK", "caught_up")}


@pytest.mark.parametrize("commit_log", [True, False])
def test_a_record_landing_after_hours_of_quiet_is_not_stop_until_it_stays_unread(commit_log: bool):
    # Auto-commit re-commits the caught-up offset every 5 s for an hour; then one record lands.
    config = LagConfig(window_s=60, stop_after_s=60)
    quiet = [(ts, 300, 0) for ts in range(15, 3601, 15)]
    unread = [(ts, 300, 1) for ts in range(3615, 3721, 15)]  # nobody reads it: no commit after 3595 s
    commits = [(ts, 300) for ts in range(0, 3600, 5)] if commit_log else []
    reports = statuses_with_commits(quiet + unread, commits, config)[len(quiet) :]
    statuses = {r.ts_ms // 1000: r.status for r in reports}
    # Not STALL from the old same-offset commits, not STOP from an hour without a new offset:
    # the silence counts from 3600 s (caught up), so STOP once it passes stop_after_s (60 s).
    before = {statuses[ts] for ts in (3615, 3630, 3645, 3660)}
    # At worst lag rising 0 → 1; without commit timestamps, an offset unchanged for 3 cycles of lag is STALL.
    assert before <= ({"OK", "WARN"} if commit_log else {"OK", "WARN", "STALL"})
    assert {statuses[ts] for ts in (3675, 3690, 3705, 3720)} == {"STOP"}
    silence = "no commit" if commit_log else "committed offset unchanged"
    assert reports[-1].reason.startswith(
        f"STOP: {silence} for 2m since lag appeared (caught up at 01:00:00) > stop_after_s 1m"
    )


def test_committed_offset_below_the_log_start_is_loss_with_the_records_deleted_unread():
    thresholds = Thresholds.for_group(LagConfig(window_s=60), "g")
    tracker = PartitionTracker()
    tracker.see_log_start(15_000, 100)
    tracker.observe(0, 120, 80, thresholds, PERIOD_MS)
    tracker.observe(15_000, 150, 60, thresholds, PERIOD_MS)  # ends 200 → 210: 10 records in 15 s
    # The margin in seconds is the broker's: retention.ms 600 s minus the committed record's age,
    # at least the 15 s of log-end history (offset 150 is older than its oldest point, 200).
    report = tracker.report(thresholds, limits=TopicLimits(1, 600_000, -1))
    assert (report.status, report.retention_margin, report.retention_margin_s) == ("OK", 50, 585.0)
    assert (report.retention_limit, report.retention_reason) == (
        "time",
        "time limit nearer: retention.ms 600000 (10m); the committed record is at least 15s old (older than "
        "the log-end history), so the margin is at most this",
    )
    tracker.see_log_start(10_000, 500)  # an older reading, read late: ignored
    tracker.see_log_start(30_000, 180)
    tracker.observe(30_000, 150, 90, thresholds, PERIOD_MS)
    report = tracker.report(thresholds)
    assert (report.status, report.rule) == ("LOSS", "loss")
    assert report.reason.startswith("LOSS: 30 records deleted unread (committed offset 150 < log start 180)")
    assert (report.retention_margin, report.retention_margin_s) == (-30, 0.0)
    assert PartitionTracker.from_state(tracker.to_state()).log_start_offset == 180


def test_a_group_empty_for_two_cycles_with_no_commit_since_is_stop_at_once():
    moving = [(0, 100, 50), (15, 200, 50)]
    one = judged([*moving, (30, 250, 60)], empty(1, 30))
    two = judged([*moving, (30, 250, 60), (45, 250, 75)], empty(2, 30))
    assert one.status != "STOP"  # seen empty once: a rebalance can look like that
    assert (two.status, two.rule) == ("STOP", "stop_empty")
    assert two.reason.startswith("STOP: group empty for 2 cycles since 00:00:30, no commit since (committed offset 250")
    # Without membership, the same 15 s of standstill is nothing yet.
    assert judged([*moving, (30, 250, 60), (45, 250, 75)], None).status != "STOP"


def test_an_empty_group_that_keeps_committing_is_judged_by_time():
    # assign()-style consumers (Flink, Spark) commit without ever joining: the group is always empty.
    moving = [(ts, 100 + ts, 20) for ts in range(0, 61, 15)]
    report = judged(moving, empty(5, 0))
    assert report.status == "OK"
    standing = [*moving, *[(ts, 160, 20 + ts) for ts in range(75, 121, 15)]]
    stopped = judged(standing, empty(9, 0))
    assert (stopped.status, stopped.rule) == ("STOP", "stop")  # 60 s silent > stop_after_s 30 s
    assert stopped.reason.endswith("no member owns it")


def test_a_member_that_owns_a_partition_that_does_not_move_is_stall_after_two_cycles():
    observations = [(0, 100, 50), (15, 200, 50), (30, 300, 50), (45, 300, 65)]
    report = judged(observations, OWNED)
    assert (report.status, report.rule) == ("STALL", "stall_owned")
    assert report.reason.startswith(
        "STALL: committed offset 300 unchanged at 2 cycles (15s) while app-1 on /10.0.0.1 owns it, lag 65"
    )
    # Nobody owns it: membership cannot tell, and 15 s is too short for the time rules.
    assert judged(observations, UNOWNED).status == "OK"
    assert judged(observations[:3], OWNED).status == "OK"  # moving


def test_a_member_that_commits_once_a_minute_is_not_stall_between_its_commits():
    # The offset moves every 4 cycles (60 s): its usual standstill is 4, so STALL needs 8.
    observations = [(ts, 1000 + 100 * (ts // 60), 200) for ts in range(0, 301, 15)]
    config = LagConfig(window_s=300, stop_after_s=600)
    # From its first move on (the first standstill is its usual one); before it, nothing is known.
    assert {judged(observations[: i + 1], OWNED, config).status for i in range(4, len(observations))} == {"OK"}
    stuck = [*observations, *[(ts, 1500, 200 + ts) for ts in range(315, 421, 15)]]
    statuses = [judged(stuck[: i + 1], OWNED, config).status for i in range(len(observations), len(stuck))]
    assert statuses.index("STALL") == 6  # the 8th observation at offset 1500 (2 more after 300 s)


def test_silence_beyond_stop_after_s_is_stop_even_while_a_member_owns_it():
    # A killed consumer stays a member until its session times out; it does not commit either.
    commits = [(ts, 100 + 10 * ts) for ts in range(0, 21, 5)]
    observations = [(ts, 300, 100 + ts) for ts in range(25, 56, 15)]
    report = judged(observations, OWNED, commits=commits)
    assert (report.status, report.rule) == ("STOP", "stop")
    assert report.reason.startswith("STOP: no commit for 35s > stop_after_s 30s (last commit at 00:00:20, ")
    assert "lag 155), while app-1 on /10.0.0.1 still owns it;" in report.reason


def test_a_partition_that_commits_once_a_minute_gets_twice_that_before_stop():
    commits = [(ts, 100 + ts) for ts in range(0, 181, 60)]  # 0, 60, 120, 180 s
    observations = [(ts, 100 + min(ts // 60, 3) * 60, 500) for ts in range(15, 301, 15)]
    report = judged(observations, UNOWNED, LagConfig(window_s=300), commits)
    assert report.status == "OK"  # 120 s silent: not more than 2 x 60 s
    later = judged([*observations, (315, 280, 515)], UNOWNED, LagConfig(window_s=300), commits)
    assert (later.status, later.rule) == ("STOP", "stop")
    assert "> 2 x usual gap 1m (last commit at 00:03:00" in later.reason


def test_a_cycle_without_owner_readings_claims_nothing_about_owners():
    # DescribeGroups off: ListGroups gives the state, nobody says who owns what.
    observations = [(ts, 300, 100 + ts) for ts in range(0, 46, 15)]
    unknown = Membership(empty_cycles=0, empty_since_ms=-1, owner=None, owners_known=False)
    report = judged(observations, unknown, commits=[(0, 300)])
    assert (report.status, report.rule) == ("STOP", "stop")
    assert "lag 145);" in report.reason and "owns" not in report.reason and "membership" not in report.reason


def test_a_consumer_falling_behind_is_warn_after_min_window_points_not_a_whole_window():
    # 20 records/s produced. Healthy for 5 minutes: its lag jitters within its 5 s commit interval.
    rng = random.Random(7)
    healthy = [(ts, 20 * ts - (lag := rng.randrange(0, 100)), lag) for ts in range(0, 301, 15)]
    config = LagConfig(window_s=300)
    assert {track(healthy[: i + 1], config).status for i in range(len(healthy))} == {"OK"}
    # Then it consumes 10 records/s: lag grows by 150 per cycle, half of what is produced.
    end, committed = 20 * 300, healthy[-1][1]
    slow = []
    for ts in range(315, 361, 15):
        end, committed = end + 300, committed + 150
        slow.append((ts, committed, end - committed))
    statuses = [track([*healthy, *slow[: i + 1]], config).status for i in range(len(slow))]
    assert statuses[-2:] == ["WARN", "WARN"], statuses  # the 3rd observation of the rise
    report = track([*healthy, *slow], config)
    assert report.rule == "lag_rising" and "of what was produced)" in report.reason


def test_docs_rules_table_is_generated_from_the_rules_table():
    from harness.processes import ROOT
    from spark_jobs.lag import rules

    text = (ROOT / "docs" / "rollups.md").read_text()
    assert rules.render_docs(text) == text, "docs/rollups.md is stale: run `python -m spark_jobs.lag.rules`"
    for rule in rules.RULES:
        assert f"| {rule.status} | {rule.id} | {rule.when} |" in text
