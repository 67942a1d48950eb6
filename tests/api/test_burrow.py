"""Burrow's v3 API over a known lake: shapes checked against a JSON Schema written from Burrow's source,
values against the lake's rows, and Burrow's 404 answers for unknown clusters, groups and paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from api import statuses
from tests.api.conftest import CLUSTER, COMMIT_WINDOW_MINUTES, KnownLake, RunningApi

SCHEMA = json.loads((Path(__file__).parent / "burrow_v3.schema.json").read_text())


def validate(body: Any, definition: str) -> None:
    jsonschema.validate(body, {**SCHEMA, "$ref": f"#/$defs/{definition}"})


@pytest.mark.parametrize(
    ("path", "definition"),
    [
        ("/v3/kafka", "httpResponseClusterList"),
        (f"/v3/kafka/{CLUSTER}", "httpResponseConfigModuleDetail_cluster"),
        (f"/v3/kafka/{CLUSTER}/consumer", "httpResponseConsumerList"),
        (f"/v3/kafka/{CLUSTER}/consumer/slow", "httpResponseConsumerDetail"),
        (f"/v3/kafka/{CLUSTER}/consumer/slow/status", "httpResponseConsumerStatus"),
        (f"/v3/kafka/{CLUSTER}/consumer/slow/lag", "httpResponseConsumerStatus"),
        (f"/v3/kafka/{CLUSTER}/topic", "httpResponseTopicList"),
        (f"/v3/kafka/{CLUSTER}/topic/orders", "httpResponseTopicDetail"),
        (f"/v3/kafka/{CLUSTER}/topic/orders/consumers", "httpResponseTopicConsumerDetail"),
    ],
)
def test_every_endpoint_answers_in_burrows_shape(api: RunningApi, path: str, definition: str) -> None:
    code, headers, raw = api.get(path)
    assert code == 200
    assert headers["content-type"] == "application/json"
    body = json.loads(raw)
    validate(body, definition)
    assert body["error"] is False
    assert body["request"]["url"] == path


def test_lists_name_what_the_lake_holds(api: RunningApi, known_lake: KnownLake) -> None:
    assert api.json("/v3/kafka")[1]["clusters"] == [CLUSTER]
    groups = sorted({r["group_id"] for r in known_lake.rows["lag_1m"]})
    assert api.json(f"/v3/kafka/{CLUSTER}/consumer")[1]["consumers"] == groups
    admin_topics = {r["topic"] for r in known_lake.rows["metrics_1m"] if r["metric"] == "log_end_offset"}
    assert api.json(f"/v3/kafka/{CLUSTER}/topic")[1]["topics"] == sorted(admin_topics)
    orders = {r["partition"]: r["last"] for r in known_lake.rows["metrics_1m"] if r.get("topic") == "orders"}
    assert api.json(f"/v3/kafka/{CLUSTER}/topic/orders")[1]["offsets"] == [orders[0], orders[1]]
    consumers = sorted({r["group_id"] for r in known_lake.rows["lag_1m"] if r["topic"] == "orders"})
    assert api.json(f"/v3/kafka/{CLUSTER}/topic/orders/consumers")[1]["consumers"] == consumers


def _in_window(known_lake: KnownLake, key: tuple[str, str, int], now_ms: int) -> list[dict[str, Any]]:
    """The lake rows of one partition inside the commit window that ends at `now_ms` (oldest first)."""
    since = now_ms - COMMIT_WINDOW_MINUTES * 60_000
    rows = [r for r in known_lake.rows["lag_1m"] if (r["group_id"], r["topic"], r["partition"]) == key]
    return sorted((r for r in rows if r["window_start"].timestamp() * 1000 >= since), key=lambda r: r["window_start"])


def test_lag_carries_every_partition_with_the_lakes_offsets_and_lag(api: RunningApi, known_lake: KnownLake) -> None:
    newest = known_lake.newest_lag()
    code, body = api.json(f"/v3/kafka/{CLUSTER}/consumer/slow/lag")
    assert code == 200
    status = body["status"]
    expected = {k: r for k, r in newest.items() if k[0] == "slow"}
    assert status["partition_count"] == len(expected) == len(status["partitions"])
    assert status["totallag"] == sum(r["lag"] for r in expected.values())
    complete = []
    for partition in status["partitions"]:
        key = ("slow", partition["topic"], partition["partition"])
        row = expected[key]
        assert partition["current_lag"] == row["lag"]
        assert partition["end"]["offset"] == row["committed_offset"]
        assert partition["end"]["lag"] == row["lag"]
        assert partition["status"] == statuses.burrow_partition_status(row["status"])
        # The newest window is still open, so its timestamp is when the API read the lake.
        window = _in_window(known_lake, key, partition["end"]["timestamp"])
        assert partition["start"]["offset"] == window[0]["committed_offset"]
        assert partition["start"]["lag"] == window[0]["lag"]
        assert partition["start"]["timestamp"] < partition["end"]["timestamp"]
        assert partition["complete"] == pytest.approx(min(1.0, len(window) / COMMIT_WINDOW_MINUTES))
        complete.append(partition["complete"] == 1.0)
    worst = max(expected.values(), key=lambda r: r["lag"])
    assert (status["maxlag"]["topic"], status["maxlag"]["partition"]) == (worst["topic"], worst["partition"])
    assert status["status"] == "ERR", "a STALL partition makes the group ERR, as in Burrow"
    assert status["complete"] == pytest.approx(sum(complete) / len(complete))
    assert not all(complete), "the stalled partition has only 3 minutes of the 5-minute window"


def test_status_lists_only_partitions_worse_than_ok(api: RunningApi) -> None:
    _, lag = api.json(f"/v3/kafka/{CLUSTER}/consumer/slow/lag")
    _, status = api.json(f"/v3/kafka/{CLUSTER}/consumer/slow/status")
    assert [p for p in lag["status"]["partitions"] if p["status"] != "OK"] == status["status"]["partitions"]
    assert len(status["status"]["partitions"]) < status["status"]["partition_count"]
    _, healthy = api.json(f"/v3/kafka/{CLUSTER}/consumer/healthy/status")
    assert healthy["status"]["status"] == "OK" and healthy["status"]["partitions"] == []


def test_newest_version_of_a_window_wins(api: RunningApi, known_lake: KnownLake) -> None:
    _, body = api.json(f"/v3/kafka/{CLUSTER}/consumer/stopped/lag")
    [partition] = body["status"]["partitions"]
    assert partition["status"] == "STOP"
    assert partition["current_lag"] == known_lake.newest_lag()[("stopped", "payments", 1)]["lag"]


def test_unknown_group_or_cluster_gives_burrows_notfound(api: RunningApi) -> None:
    for path in (f"/v3/kafka/{CLUSTER}/consumer/no-such-group/status", "/v3/kafka/no-such-cluster/consumer/slow/lag"):
        code, body = api.json(path)
        assert code == 404
        validate(body, "httpResponseConsumerStatus")
        assert body["error"] is False and body["message"] == "consumer status returned"
        assert body["status"]["status"] == "NOTFOUND" and body["status"]["partitions"] == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/v3/kafka/no-such-cluster", "cluster module not found"),
        ("/v3/kafka/no-such-cluster/consumer", "cluster not found"),
        ("/v3/kafka/no-such-cluster/topic", "cluster not found"),
        (f"/v3/kafka/{CLUSTER}/topic/no-such-topic", "cluster or topic not found"),
        (f"/v3/kafka/{CLUSTER}/consumer/no-such-group", "cluster or consumer not found"),
    ],
)
def test_unknown_names_give_burrows_error_body(api: RunningApi, path: str, message: str) -> None:
    code, body = api.json(path)
    assert code == 404
    validate(body, "httpResponseError")
    assert body == {"error": True, "message": message, "request": {"url": path, "host": body["request"]["host"]}}


def test_unknown_path_gives_burrows_catch_all(api: RunningApi) -> None:
    code, _, raw = api.get("/v3/nothing/here")
    assert code == 404
    assert json.loads(raw) == {"error": True, "message": "invalid request type", "result": {}}


def test_every_lagwatch_status_has_a_burrow_partition_status() -> None:
    from api.statuses import BURROW_CODES, BURROW_PARTITION_STATUS
    from lagwatch.vocabulary import STATUS_ORDER

    assert set(BURROW_PARTITION_STATUS) == set(STATUS_ORDER)
    assert set(BURROW_PARTITION_STATUS.values()) <= set(BURROW_CODES)
