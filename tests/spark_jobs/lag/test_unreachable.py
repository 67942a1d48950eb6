"""A cluster that cannot be read is judged ERR, with the reason; the other clusters' groups are untouched.

Spec tests over the lag step with samples built here (two clusters, one group each), then the
rule as the rules table states it, and the reachability state the admin `up` samples build.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lagwatch.config import LagConfig
from spark_jobs import route
from spark_jobs.lag import reachability, reasons, step
from spark_jobs.lag.rules import RULES, Outage, Thresholds, judge
from tests.spark_jobs.conftest import parsed_sample

T0 = 1_767_261_720_000  # a minute's start
CYCLE_MS = 15_000
CONFIG = LagConfig(window_s=300)


def operator_frame(rows: list[dict[str, Any]], roles: tuple[int, ...] = (route.LAG, route.MEMBER)) -> Any:
    """The operator's rows of these samples (with lag routing) in the given roles."""
    for row in rows:
        row.pop("event_time", None)
    operator, _ = route.operator_rows(pa.Table.from_pylist(rows), None, lag_routing=True)
    frame = operator.to_pandas()
    return frame[frame["role"].isin(roles)]


def offsets(cluster: str, ts_ms: int, committed: int, lag: int, partition: int = 0) -> list[dict[str, Any]]:
    labels = {"cluster": cluster, "source": "admin", "group_id": "orders", "topic": "t", "partition": partition}
    return [
        parsed_sample(ts_ms, "committed_offset", "counter", committed, **labels),
        parsed_sample(ts_ms, "consumer_lag", "gauge", lag, **labels),
    ]


def admin_up(cluster: str, ts_ms: int, value: float) -> dict[str, Any]:
    return parsed_sample(ts_ms, "up", "gauge", value, cluster=cluster, source="admin")


def two_clusters_steady(cycles: int) -> list[dict[str, Any]]:
    """`cycles` admin cycles of both clusters: group `orders` consuming t/0 and t/1 with some lag."""
    rows = []
    for cycle in range(cycles):
        ts = T0 + cycle * CYCLE_MS
        for cluster in ("prod-eu", "staging"):
            rows += [*offsets(cluster, ts, 1000 + 100 * cycle, 40), *offsets(cluster, ts, 500 + 50 * cycle, 20, 1)]
            rows.append(admin_up(cluster, ts, 1))
    return rows


class Judged:
    """The lag step over batches, with the reachability state folded from the admin `up` samples as
    the operator does (rollups.py): the last batch's rows by key."""

    def __init__(self, cluster_lag: dict[str, dict[str, float]] | None = None) -> None:
        self.groups: dict = {}
        self.memberships: dict = {}
        self.reach: reachability.Reachability = {}
        self.cluster_lag = cluster_lag

    def batch(self, rows: list[dict[str, Any]]) -> tuple[dict, dict]:
        ups = operator_frame([dict(row) for row in rows], (route.CLUSTER,))
        touched = reachability.fold(self.reach, ups)
        down = reachability.outages(self.reach)
        lag_rows, group_rows = step.update_lag(
            operator_frame(rows),
            self.groups,
            self.memberships,
            CONFIG,
            0,
            None,
            self.cluster_lag,
            {name: outage for name, outage in down.items() if name in touched},
            set(down),
        )
        partitions = _by_key(lag_rows, ("cluster", "topic", "partition"))
        statuses = _by_key(group_rows, ("cluster",))
        return partitions, statuses


def _by_key(columns: dict, key: tuple[str, ...]) -> dict:
    if not columns:
        return {}
    names = list(columns)
    rows = [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    return {tuple(row[k] for k in key) if len(key) > 1 else row[key[0]]: row for row in rows}


def test_a_failed_admin_cycle_turns_that_cluster_s_groups_err_and_leaves_the_other_alone():
    judged = Judged()
    judged.batch(two_clusters_steady(2))
    down_at = T0 + 2 * CYCLE_MS
    partitions, statuses = judged.batch(
        [admin_up("prod-eu", down_at, 0), *offsets("staging", down_at, 1200, 40), admin_up("staging", down_at, 1)]
    )
    eu = statuses["prod-eu"]
    assert (eu["group_id"], eu["status"], eu["rule"]) == ("orders", "ERR", "unreachable")
    since = reasons.format_clock(down_at)
    last = reasons.format_clock(T0 + CYCLE_MS)
    assert (
        eu["reason"]
        == f"ERR: cluster prod-eu unreachable since {since}: no offsets, last judged OK at {last} (total lag 60 then)"
    )
    assert (eu["total_lag"], eu["max_lag"], eu["max_time_lag_s"], eu["members"]) == (None, None, None, None)
    assert (eu["updated_at"], eu["window_start"], eu["partitions"], eu["topics"]) == (down_at, T0, 2, "t")
    err_rows = [row for key, row in partitions.items() if key[0] == "prod-eu"]
    assert sorted(row["partition"] for row in err_rows) == [0, 1]
    for row in err_rows:
        assert (row["status"], row["rule"], row["lag"], row["committed_offset"], row["time_lag_s"]) == (
            "ERR", "unreachable", None, None, None,
        )  # fmt: skip
    assert partitions[("prod-eu", "t", 0)]["reason"] == (
        f"ERR: cluster prod-eu unreachable since {since}: no offsets, last observed at {last} "
        "(committed offset 1100, lag 40 then)"
    )
    staging = statuses["staging"]
    assert (staging["status"], staging["total_lag"], staging["updated_at"]) == ("OK", 40 + 20, down_at)
    assert partitions[("staging", "t", 0)]["lag"] == 40


def test_the_outage_keeps_its_start_and_ends_with_the_next_cycle_that_reads_offsets():
    judged = Judged()
    judged.batch(two_clusters_steady(2))
    first_down = T0 + 2 * CYCLE_MS
    judged.batch([admin_up("prod-eu", first_down, 0)])
    later = T0 + 5 * CYCLE_MS
    _, statuses = judged.batch([admin_up("prod-eu", later, 0)])
    assert statuses["prod-eu"]["status"] == "ERR"
    assert statuses["prod-eu"]["updated_at"] == later
    assert f"unreachable since {reasons.format_clock(first_down)}:" in statuses["prod-eu"]["reason"]
    assert "staging" not in statuses, "a cluster that answered gets no row from another's outage"
    back = T0 + 6 * CYCLE_MS
    partitions, statuses = judged.batch(
        [admin_up("prod-eu", back, 1), *offsets("prod-eu", back, 1700, 30), *offsets("prod-eu", back, 900, 10, 1)]
    )
    assert (statuses["prod-eu"]["status"], statuses["prod-eu"]["total_lag"]) == ("OK", 40)
    assert partitions[("prod-eu", "t", 0)]["lag"] == 30


def test_the_err_row_replaces_the_same_minute_s_row_of_the_same_batch():
    """Rows of one batch share a version, so the batch holds one row per key: the newer, ERR."""
    judged = Judged()
    down_at = T0 + 2 * CYCLE_MS
    partitions, statuses = judged.batch([*two_clusters_steady(2), admin_up("prod-eu", down_at, 0)])
    assert statuses["prod-eu"]["status"] == "ERR"
    assert partitions[("prod-eu", "t", 0)]["status"] == "ERR"
    assert statuses["staging"]["status"] == "OK"


def test_a_late_failed_cycle_does_not_hide_a_newer_observation():
    judged = Judged()
    judged.batch(two_clusters_steady(3))
    _, statuses = judged.batch([admin_up("prod-eu", T0 + CYCLE_MS // 2, 0)])  # older than the newest reading
    assert statuses == {}


def test_groups_of_an_unreachable_cluster_stay_in_the_state_past_the_usual_silence():
    much_later = T0 + 3 * CONFIG.window_ms  # the watermark two windows past prod-eu's last reading
    for unreachable_now, kept in (({"prod-eu"}, True), (set(), False)):
        judged = Judged()
        judged.batch(two_clusters_steady(2))
        judged.batch([admin_up("prod-eu", T0 + 2 * CYCLE_MS, 0)])
        step.update_lag(
            operator_frame(offsets("staging", much_later, 5000, 0)),
            judged.groups,
            judged.memberships,
            CONFIG,
            much_later,
            unreachable_clusters=unreachable_now,
        )
        assert (("prod-eu", "orders") in judged.groups) is kept
        assert ("staging", "orders") in judged.groups


def test_each_cluster_s_groups_are_judged_by_its_own_lag_thresholds():
    judged = Judged(cluster_lag={"staging": {"warn_lag": 30}})
    _, statuses = judged.batch(two_clusters_steady(3))
    assert (statuses["staging"]["status"], statuses["staging"]["rule"]) == ("WARN", "warn_lag")
    assert statuses["staging"]["reason"].startswith("WARN: lag 40 > warn_lag 30")
    assert statuses["prod-eu"]["status"] == "OK"


def test_unreachable_is_the_first_rule_so_it_outranks_every_other_verdict():
    assert (RULES[0].id, RULES[0].status) == ("unreachable", "ERR")
    thresholds = Thresholds.for_group(CONFIG, "g")
    outage = Outage("prod-eu", since_ms=T0 + 30_000, at_ms=T0 + 45_000)
    # Committed below the log start: LOSS, unless the cluster cannot be read now.
    verdict = judge([T0], [100], [50], T0, None, thresholds, log_start=400)
    assert verdict.status == "LOSS"
    verdict = judge([T0], [100], [50], T0, None, thresholds, log_start=400, outage=outage)
    assert (verdict.status, verdict.rule) == ("ERR", "unreachable")
    assert verdict.reason.startswith(f"ERR: cluster prod-eu unreachable since {reasons.format_clock(T0 + 30_000)}")


@pytest.mark.parametrize(
    ("readings", "expected"),
    [
        ([(1, 1)], {}),
        ([(1, 1), (2, 0), (3, 0)], {"c": Outage("c", 2, 3)}),
        ([(2, 0), (3, 1)], {}),
        ([(3, 0), (2, 1)], {"c": Outage("c", 3, 3)}),  # an older reading read late changes nothing
        ([(1, 0), (2, 1), (3, 0)], {"c": Outage("c", 3, 3)}),  # a new outage starts at its own first cycle
    ],
)
def test_reachability_says_since_when_a_cluster_is_down(readings, expected):
    state: reachability.Reachability = {}
    for ts, value in readings:
        reachability.fold(state, operator_frame([admin_up("c", ts, value)], (route.CLUSTER,)))
    assert reachability.outages(state) == expected


def test_route_copies_the_admin_up_sample_to_every_bucket_and_counts_it_once():
    rows = [admin_up("prod-eu", T0, 0), parsed_sample(T0, "up", "gauge", 0, cluster="prod-eu", broker="1")]
    for row in rows:
        row.pop("event_time")
    operator, buckets = route.operator_rows(pa.Table.from_pylist(rows), None, lag_routing=True)
    roles = operator.column("role").to_numpy()
    assert (roles == route.CLUSTER).sum() == route.STATE_BUCKETS, "the JMX `up` of a broker is not copied"
    assert sorted(buckets[roles == route.CLUSTER].tolist()) == list(range(route.STATE_BUCKETS))
    batch = route.route(pa.Table.from_pylist(rows), None, lag_routing=True)
    assert sum(batch.column("records").to_pylist()) == 2


def test_a_real_spark_pass_judges_the_unreachable_cluster_s_groups_err_and_the_other_s_ok(spark, tmp_path):
    """The job's rollups operator on local Spark: the admin `up` = 0 of prod-eu reaches every
    bucket, and its group turns ERR in group_status and lag_1m; staging's stays OK."""
    from tests.spark_jobs.conftest import newest_by_key, run_rollups

    down_at = T0 + 2 * CYCLE_MS
    batches = [
        two_clusters_steady(2),
        [admin_up("prod-eu", down_at, 0), *offsets("staging", down_at, 1200, 40), admin_up("staging", down_at, 1)],
    ]
    emitted = run_rollups(spark, tmp_path, batches, CONFIG, ("lag_1m", "group_status", "metrics_1m"))
    statuses = newest_by_key(emitted["group_status"], lambda row: (row.cluster, row.group_id))
    eu, staging = statuses[("prod-eu", "orders")], statuses[("staging", "orders")]
    assert (eu.status, eu.rule, eu.total_lag) == ("ERR", "unreachable", None)
    assert eu.reason.startswith(f"ERR: cluster prod-eu unreachable since {reasons.format_clock(down_at)}: no offsets")
    assert (staging.status, staging.total_lag) == ("OK", 60)
    partitions = newest_by_key(emitted["lag_1m"], lambda row: (row.cluster, row.partition))
    assert [(partitions[("prod-eu", p)].status, partitions[("prod-eu", p)].lag) for p in (0, 1)] == [("ERR", None)] * 2
    assert [partitions[("staging", p)].status for p in (0, 1)] == ["OK", "OK"]
    ups = [row for rows in emitted["metrics_1m"] for row in rows if row.metric == "up" and row.cluster == "prod-eu"]
    assert ups and ups[-1].last == 0, "the admin `up` sample keeps its own metric series as well"
