"""An unreachable cluster's ERR rows through the API: no invented lag.

The Spark job writes a cluster it cannot read as ERR rows whose offsets and lag are NULL
(spark_jobs/lag/unreachable.py). Here a lake holds such a cluster ("gone": two minutes of real
rows, then the ERR minute) beside a healthy one, and a running `lagwatch api` must leave the ERR
group's lag series out of /metrics while keeping its status series, and answer Burrow's status
ERR with the reason as the message and the lag unknown the way Burrow writes it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api import statuses
from lagwatch import lake as lakelib
from tests.api.conftest import CLUSTER, RunningApi, lag_row, write_lake
from tests.api.test_burrow import validate
from tests.api.test_metrics import by, scrape

GONE, GROUP, TOPIC = "gone", "orders-app", "orders"
REASON = "ERR: cluster gone unreachable since 10:41:00: no offsets, last judged OK at 10:40:30 (total lag 24 then)"
#: Lag series: every one of them must be absent for the ERR group, present for the healthy one.
LAG_FAMILIES = {
    "kafka_consumergroup_group_lag": "group",
    "burrow_kafka_consumer_partition_lag": "consumer_group",
    "kafka_consumergroup_group_max_lag": "group",
    "kafka_consumergroup_group_sum_lag": "group",
    "kafka_consumergroup_group_topic_sum_lag": "group",
    "burrow_kafka_consumer_lag_total": "consumer_group",
}
NULL_WHEN_UNREACHABLE = dict.fromkeys(
    ("committed_offset", "end_offset", "lag", "lag_max", "consume_rate", "produce_rate", "time_lag_s", "eta_s")
)


def group_row(now: dt.datetime, cluster: str, group: str, status: str, reason: str, total: int | None) -> dict:
    return {"cluster": cluster, "group_id": group, "status": status, "reason": reason,
            "rule": "unreachable" if status == "ERR" else "ok", "total_lag": total, "max_lag": total,
            "max_time_lag_s": None, "partitions": 2, "topics": TOPIC, "group_type": "classic",
            "window_start": now, "updated_at": now, "version": 1}  # fmt: skip


def admin_up_row(now: dt.datetime, cluster: str, value: float) -> dict:
    """The admin collector's `up` for the minute (0: its cycle could not read the cluster)."""
    return {"cluster": cluster, "window_start": now, "window_end": now + dt.timedelta(minutes=1), "source": "admin",
            "metric": "up", "kind": "gauge", "samples": 1, "min": value, "max": value, "avg": value, "first": value,
            "last": value, "version": 1}  # fmt: skip


def unreachable_lake(root: Path) -> dt.datetime:
    now = lakelib.utc_now().replace(second=0, microsecond=0)
    lag: list[dict[str, Any]] = []
    for p in (0, 1):
        lag += [{**lag_row(now - dt.timedelta(minutes=m), GROUP, TOPIC, p, 100, 12), "cluster": GONE} for m in (2, 1)]
        lag.append({**lag_row(now, GROUP, TOPIC, p, 0, 0), **NULL_WHEN_UNREACHABLE, "cluster": GONE,
                    "status": "ERR", "rule": "unreachable", "reason": REASON})  # fmt: skip
        lag.append(lag_row(now, GROUP, TOPIC, p, 50, 5))  # the healthy cluster, same group and topic names
    groups = [group_row(now, GONE, GROUP, "ERR", REASON, None), group_row(now, CLUSTER, GROUP, "OK", "", 10)]
    admin_up = [admin_up_row(now, GONE, 0.0), admin_up_row(now, CLUSTER, 1.0)]
    write_lake(root, {"lag_1m": lag, "group_status": groups, "metrics_1m": admin_up})
    return now


def test_metrics_leave_out_the_lag_of_err_rows_and_keep_their_status(
    tmp_path: Path, start_api: Callable[..., RunningApi]
) -> None:
    unreachable_lake(tmp_path / "lake")
    _, samples = scrape(start_api(tmp_path / "lake"))

    for family, group_label in LAG_FAMILIES.items():
        clusters = {labels.get("cluster") or labels.get("cluster_name") for labels, _ in samples.get(family, [])
                    if labels[group_label] == GROUP}  # fmt: skip
        assert clusters == {CLUSTER}, family
    assert set(by(samples, "kafka_consumergroup_group_lag", "cluster_name", "partition").values()) == {5.0}
    status = {labels["cluster"]: (labels["status"], labels["rule"], value)
              for labels, value in samples["lagwatch_consumergroup_status"]}  # fmt: skip
    assert status[GONE] == ("ERR", "unreachable", statuses.severity("ERR"))
    partition_status = by(samples, "lagwatch_consumergroup_partition_status", "cluster", "partition", "status")
    assert {k: v for k, v in partition_status.items() if k[0] == GONE} == {
        (GONE, "0", "ERR"): statuses.severity("ERR"),
        (GONE, "1", "ERR"): statuses.severity("ERR"),
    }
    assert by(samples, "lagwatch_cluster_up", "cluster") == {(GONE,): 0.0, (CLUSTER,): 1.0}
    burrow = by(samples, "burrow_kafka_consumer_status", "cluster", "consumer_group")
    assert burrow == {(GONE, GROUP): statuses.BURROW_CODES["ERR"], (CLUSTER, GROUP): statuses.BURROW_CODES["OK"]}


def test_burrow_says_err_with_the_reason_and_no_invented_lag(
    tmp_path: Path, start_api: Callable[..., RunningApi]
) -> None:
    now = unreachable_lake(tmp_path / "lake")
    api = start_api(tmp_path / "lake")

    code, body = api.json(f"/v3/kafka/{GONE}/consumer/{GROUP}/lag")
    assert code == 200
    validate(body, "httpResponseConsumerStatus")
    assert body["message"] == REASON
    status = body["status"]
    assert (status["status"], status["totallag"], status["partition_count"]) == ("ERR", 0, 2)
    oldest_ms = int((now - dt.timedelta(minutes=1)).timestamp() * 1000)  # the window's oldest row ends then
    for partition in status["partitions"]:
        assert (partition["status"], partition["current_lag"], partition["end"]) == ("STOP", 0, None), partition
        assert partition["start"] == {"offset": 100, "timestamp": oldest_ms, "observedAt": oldest_ms, "lag": 12}

    code, detail = api.json(f"/v3/kafka/{GONE}/consumer/{GROUP}")
    validate(detail, "httpResponseConsumerDetail")
    assert detail["message"] == REASON
    assert [p["current-lag"] for p in detail["topics"][TOPIC]] == [0, 0]

    code, healthy = api.json(f"/v3/kafka/{CLUSTER}/consumer/{GROUP}/lag")
    assert (healthy["message"], healthy["status"]["status"], healthy["status"]["totallag"]) == (
        "consumer status returned",
        "OK",
        10,
    )
