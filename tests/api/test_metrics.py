"""/metrics over a known lake: kafka-lag-exporter's and Burrow's names and labels carry the lake's values,
Lagwatch's own series carry status, rule, pipeline health and (when the lake has them) retention margins."""

from __future__ import annotations

import datetime as dt
import gzip
import time
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from api import statuses
from lagwatch import lake as lakelib
from tests.api.conftest import CLUSTER, KnownLake, RunningApi, lag_row, write_lake

Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(api: RunningApi, gzipped: bool = False) -> tuple[str, Samples]:
    code, headers, body = api.get("/metrics", {"Accept-Encoding": "gzip"} if gzipped else None)
    assert code == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    if gzipped:
        assert headers.get("content-encoding") == "gzip"
        body = gzip.decompress(body)
    text = body.decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return text, samples


def by(samples: Samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    return {tuple(labels[k] for k in keys): value for labels, value in samples.get(name, [])}


def test_partition_series_carry_the_newest_lake_rows(api: RunningApi, known_lake: KnownLake) -> None:
    _, samples = scrape(api)
    newest = known_lake.newest_lag()
    key = ("group", "topic", "partition")
    as_labels = {(g, t, str(p)): row for (g, t, p), row in newest.items()}
    assert by(samples, "kafka_consumergroup_group_lag", *key) == {k: r["lag"] for k, r in as_labels.items()}
    assert by(samples, "kafka_consumergroup_group_offset", *key) == {
        k: r["committed_offset"] for k, r in as_labels.items()
    }
    assert by(samples, "kafka_consumergroup_group_lag_seconds", *key) == {
        k: r["time_lag_s"] for k, r in as_labels.items() if r["time_lag_s"] is not None
    }, "an unknown time lag is left out, never a made-up number"
    burrow_key = ("consumer_group", "topic", "partition")
    assert by(samples, "burrow_kafka_consumer_partition_lag", *burrow_key) == {
        k: r["lag"] for k, r in as_labels.items()
    }
    assert by(samples, "burrow_kafka_consumer_current_offset", *burrow_key) == {
        k: r["committed_offset"] for k, r in as_labels.items()
    }
    codes = by(samples, "burrow_kafka_topic_partition_status", *burrow_key)
    assert codes == {
        k: statuses.BURROW_CODES[statuses.burrow_partition_status(r["status"])] for k, r in as_labels.items()
    }
    own = by(samples, "lagwatch_consumergroup_partition_status", *key, "status", "rule")
    assert own == {(*k, r["status"], r["rule"]): statuses.severity(r["status"]) for k, r in as_labels.items()}
    labels = next(iter(samples["kafka_consumergroup_group_lag"]))[0]
    assert set(labels) == {"cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id"}
    assert labels["cluster_name"] == CLUSTER


def test_group_series_sum_and_max_their_partitions(api: RunningApi, known_lake: KnownLake) -> None:
    _, samples = scrape(api)
    per_group: dict[str, list[dict[str, Any]]] = {}
    for (group, _, _), row in known_lake.newest_lag().items():
        per_group.setdefault(group, []).append(row)
    assert by(samples, "kafka_consumergroup_group_sum_lag", "group") == {
        (g,): sum(r["lag"] for r in rows) for g, rows in per_group.items()
    }
    assert by(samples, "burrow_kafka_consumer_lag_total", "consumer_group") == by(
        samples, "kafka_consumergroup_group_sum_lag", "group"
    )
    assert by(samples, "kafka_consumergroup_group_max_lag", "group") == {
        (g,): max(r["lag"] for r in rows) for g, rows in per_group.items()
    }
    max_time = {
        (g,): max(t)
        for g, rows in per_group.items()
        if (t := [r["time_lag_s"] for r in rows if r["time_lag_s"] is not None])
    }
    assert by(samples, "kafka_consumergroup_group_max_lag_seconds", "group") == max_time
    expected_burrow = {
        (g,): statuses.BURROW_CODES[
            statuses.burrow_group_status([statuses.burrow_partition_status(r["status"]) for r in rows])
        ]
        for g, rows in per_group.items()
    }
    assert by(samples, "burrow_kafka_consumer_status", "consumer_group") == expected_burrow
    assert expected_burrow[("slow",)] == statuses.BURROW_CODES["ERR"]
    own = by(samples, "lagwatch_consumergroup_status", "group", "status", "rule")
    assert own == {
        (r["group_id"], r["status"], r["rule"]): statuses.severity(r["status"]) for r in known_lake.rows["group_status"]
    }
    types = by(samples, "lagwatch_consumergroup_status", "group", "group_type")
    rows = known_lake.rows["group_status"]
    assert types == {(r["group_id"], r["group_type"] or ""): statuses.severity(r["status"]) for r in rows}
    topic_sums = by(samples, "kafka_consumergroup_group_topic_sum_lag", "group", "topic")
    assert topic_sums[("slow", "orders")] == sum(r["lag"] for r in per_group["slow"] if r["topic"] == "orders")


def test_topic_pipeline_broker_and_collector_series(api: RunningApi, known_lake: KnownLake) -> None:
    _, samples = scrape(api)
    ends = {
        (r["topic"], str(r["partition"])): r["last"]
        for r in known_lake.rows["metrics_1m"]
        if r["metric"] == "log_end_offset"
    }
    assert by(samples, "kafka_partition_latest_offset", "topic", "partition") == ends
    assert by(samples, "burrow_kafka_topic_partition_offset", "topic", "partition") == ends
    newest_progress = max(known_lake.rows["pipeline_progress"], key=lambda r: r["ts"])
    assert by(samples, "lagwatch_pipeline_freshness_seconds", "query") == {("rollups",): newest_progress["freshness_s"]}
    assert (
        by(samples, "lagwatch_pipeline_last_progress_timestamp_seconds", "query")[("rollups",)]
        == newest_progress["ts"].timestamp()
    )
    up = {(r["broker"],): r["last"] for r in known_lake.rows["metrics_1m"] if r["metric"] == "up"}
    assert by(samples, "lagwatch_broker_up", "broker") == up
    assert ("collector-a",) in by(samples, "lagwatch_collector_last_report_timestamp_seconds", "collector")
    assert by(samples, "lagwatch_dead_letters_total", "cluster") == {(CLUSTER,): 0.0}
    assert by(samples, "lagwatch_api_series_dropped", "level") == {
        (lvl,): 0.0 for lvl in ("cluster", "group", "group_topic", "partition")
    }
    exported = sum(len(v) for v in samples.values())
    assert by(samples, "lagwatch_api_series_exported")[()] == exported


def test_gzip_answer_is_the_same_text(api: RunningApi) -> None:
    plain, _ = scrape(api)
    zipped, _ = scrape(api, gzipped=True)
    strip = lambda text: [line for line in text.splitlines() if not line.startswith("lagwatch_api_")]  # noqa: E731
    assert strip(zipped) == strip(plain)


def test_no_retention_series_without_a_margin(api: RunningApi) -> None:
    text, _ = scrape(api)
    assert "retention_margin" not in text


def test_retention_margin_is_exported_where_the_row_has_one(tmp_path: Path, start_api: Any) -> None:
    lake = tmp_path / "lake"
    t = lakelib.utc_now().replace(second=0, microsecond=0)
    with_margin = {
        **lag_row(t, "new-writer", "orders", 1, 10, 2),
        "retention_margin": 12_345,
        "retention_margin_s": 678.5,
    }
    write_lake(lake, {"lag_1m": [lag_row(t, "old-writer", "orders", 0, 5, 1), with_margin]})
    _, samples = scrape(start_api(lake))
    assert by(samples, "lagwatch_consumergroup_retention_margin_records", "group", "partition") == {
        ("new-writer", "1"): 12_345
    }
    assert by(samples, "lagwatch_consumergroup_retention_margin_seconds", "group", "partition") == {
        ("new-writer", "1"): 678.5
    }


def test_readiness_follows_lake_freshness(api: RunningApi, tmp_path: Path, start_api: Any) -> None:
    assert api.json("/healthz") == (200, {"status": "ok"})
    code, ready = api.json("/readyz")
    assert code == 200 and ready["ready"] is True
    assert ready["components"]["spark:rollups@" + CLUSTER]["ok"] is True
    assert ready["components"]["collector:collector-a@" + CLUSTER]["ok"] is True

    stale = tmp_path / "stale"
    old = lakelib.utc_now().replace(second=0, microsecond=0) - dt.timedelta(minutes=5)
    status = {"cluster": CLUSTER, "group_id": "g", "status": "OK", "window_start": old, "updated_at": old}
    write_lake(stale, {"lag_1m": [lag_row(old, "g", "t", 0, 1, 1)], "group_status": [status]})
    quiet = start_api(stale, ready_max_age_s=60)
    code, body = quiet.json("/readyz")
    assert code == 503 and body["ready"] is False
    assert body["lake"]["age_s"] > 60
    assert quiet.get("/healthz")[0] == 200, "the process is up even when the lake is stale"


def test_readiness_after_an_idle_spell_judges_the_lake_not_the_cached_snapshot(tmp_path: Path, start_api: Any) -> None:
    """Issue 27: an API nobody asked for a while answered /readyz from the snapshot of its start
    (503, and /metrics without the series written since) while the lake was fresh."""
    lake = tmp_path / "lake"
    old = lakelib.utc_now() - dt.timedelta(minutes=5)
    status = {"cluster": CLUSTER, "group_id": "g", "status": "OK", "window_start": old, "updated_at": old}
    write_lake(lake, {"group_status": [status]})
    idle = start_api(lake, ready_max_age_s=60, cache_s=1)
    assert idle.json("/readyz")[0] == 503  # the lake is 5 minutes old: not ready, and now cached
    now = lakelib.utc_now()
    fresh = {**status, "window_start": now, "updated_at": now}
    write_lake(lake, {"group_status": [fresh], "lag_1m": [lag_row(now, "g", "t", 0, 5, 3)]})  # the job writes on
    time.sleep(1.5)  # the cached snapshot is now older than cache_s
    code, body = idle.json("/readyz")  # one request, as `lagwatch status` or a curl makes
    assert (code, body["ready"]) == (200, True), body
    assert body["lake"]["age_s"] < 60
