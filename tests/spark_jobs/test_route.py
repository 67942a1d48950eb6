"""Routing decoded samples to the state buckets: Spark's own hashes, every record once, packed."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import numpy as np
import pyarrow as pa

from lagwatch.samples import make_sample
from spark_jobs import route
from spark_jobs.decode import decode_batch
from spark_jobs.packed import unpack
from spark_jobs.windows import SERIES_COLUMNS, series_labels

TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
KAFKA_TIME = dt.datetime(2026, 1, 1, 0, 0, 5, tzinfo=dt.UTC)

#: Label sets that stress the hash input: NULLs in different places, a separator and a NUL
#: inside a value, non-ASCII text, a negative partition, and lag series of two groups.
LABELS: list[dict[str, Any]] = [
    {"source": "jmx", "metric": "messages_in_total", "kind": "counter", "broker": "1"},
    {"source": "jmx", "metric": "messages_in_total", "kind": "counter", "topic": "1"},
    {"source": "admin", "metric": "log_end_offset", "kind": "counter", "topic": 't "\u001f\u0000 ü', "partition": -3},
    {
        "source": "admin",
        "metric": "committed_offset",
        "kind": "counter",
        "group_id": "g1",
        "topic": "t",
        "partition": 0,
    },
    {"source": "admin", "metric": "consumer_lag", "kind": "gauge", "group_id": "g1", "topic": "t", "partition": 7},
    {"source": "admin", "metric": "consumer_lag", "kind": "gauge", "group_id": "gé", "topic": "t", "partition": 7},
    {"source": "admin", "metric": "consumer_lag", "kind": "gauge", "topic": "t", "partition": 7},  # no group
]


def _records(values: list[bytes | None]) -> pa.RecordBatch:
    count = len(values)
    return pa.RecordBatch.from_pydict(
        {
            "value": pa.array(values, pa.binary()),
            "topic": ["samples"] * count,
            "partition": pa.array([2] * count, pa.int32()),
            "offset": pa.array(range(100, 100 + count), pa.int64()),
            "timestamp": pa.array([KAFKA_TIME] * count, pa.timestamp("us", tz="UTC")),
        }
    )


def _sample(labels: dict[str, Any], ts: int = TS, value: float = 1.0, cluster: str = "prod") -> bytes:
    sample = make_sample(ts=ts, cluster=cluster, collector="c", value=value, **labels)
    return sample.to_json()


def _decoded(values: list[bytes | None]) -> pa.Table:
    return pa.Table.from_batches([decode_batch(_records(values), max_record_bytes=4096)])


def test_series_id_bucket_and_pair_key_equal_sparks_hashes(spark: Any) -> None:
    """The series id and the bucket key the state of existing checkpoints, which Spark computed
    with these expressions: route.py must give the very same numbers."""
    from pyspark.sql import functions as F

    decoded = _decoded([_sample(labels) for labels in LABELS])
    rows, buckets = route.operator_rows(decoded, cluster=None, lag_routing=True)

    frame = spark.createDataFrame(decoded.select(list(SERIES_COLUMNS)).to_pandas())
    frame = frame.withColumn("partition", F.col("partition").cast("int"))
    text = F.concat_ws("\u001f", *[F.coalesce(F.col(c).cast("string"), F.lit("\u0000")) for c in SERIES_COLUMNS])
    is_lag = (
        (F.col("source") == "admin")
        & F.col("metric").isin("committed_offset", "consumer_lag")
        & F.col("group_id").isNotNull()
        & F.col("topic").isNotNull()
        & F.col("partition").isNotNull()
    )
    sid = F.xxhash64(text)
    expected = frame.select(
        sid.alias("sid"),
        F.when(is_lag, F.pmod(F.xxhash64("cluster", "group_id"), F.lit(16))).otherwise(F.pmod(sid, F.lit(16))),
        F.xxhash64("cluster", "group_id", "topic", "partition"),
        F.when(is_lag, F.lit(route.LAG)).otherwise(F.lit(route.METRIC)),
    ).collect()

    assert rows.column("sid").to_pylist() == [row[0] for row in expected]
    assert buckets.tolist() == [row[1] for row in expected]
    lag_pkeys = [key for key, row in zip(rows.column("pkey").to_pylist(), expected, strict=True) if row[3] == route.LAG]
    assert lag_pkeys == [row[2] for row in expected if row[3] == route.LAG], "a lag pair's key"
    assert rows.column("role").to_pylist() == [row[3] for row in expected]
    assert rows.column("role").to_pylist() == [0, 0, 0, 1, 1, 1, 0], "only a group's partition is lag"
    assert len(set(rows.column("sid").to_pylist())) == len(LABELS), "NULLs in different places differ"


def test_series_key_carries_every_label_unchanged() -> None:
    decoded = _decoded([_sample(labels) for labels in LABELS])
    rows, _ = route.operator_rows(decoded, cluster=None, lag_routing=True)
    labels = series_labels(np.array(rows.column("series_key").to_pylist(), dtype=object))
    for index, given in enumerate(LABELS):
        expected = {name: None for name in SERIES_COLUMNS} | {"cluster": "prod"} | given
        assert {name: labels[name][index] for name in SERIES_COLUMNS} == expected


def test_large_string_labels_route_exactly_like_strings() -> None:
    """Spark hands Python large_string columns when spark.sql.execution.arrow.useLargeVarTypes is on."""
    decoded = _decoded([_sample(labels) for labels in LABELS])
    large = decoded.cast(
        pa.schema([f.with_type(pa.large_string()) if f.type == pa.string() else f for f in decoded.schema])
    )
    assert large.schema != decoded.schema
    plain_rows, plain_buckets = route.operator_rows(decoded, cluster=None, lag_routing=True)
    large_rows, large_buckets = route.operator_rows(large, cluster=None, lag_routing=True)
    assert large_rows.equals(plain_rows)
    assert large_buckets.tolist() == plain_buckets.tolist()


def test_every_record_lands_once_in_its_bucket_with_the_newest_event_time() -> None:
    """300 samples of 30 series and two dead letters: each routed row is one bucket's records,
    in their order, and says the newest event time among its samples (NULL for dead letters only)."""
    values = [_sample({**LABELS[0], "broker": str(i % 30)}, ts=TS + 1000 * i, value=float(i)) for i in range(300)]
    values[17] = b"not json"
    values.insert(40, None)
    routed = route.route(_decoded(values), cluster="job", lag_routing=True)

    buckets = routed.column("bucket").to_pylist()
    assert len(buckets) == len(set(buckets)) > 1, "one row per bucket present"
    seen: list[float] = []
    dead: list[dict[str, Any]] = []
    cells = routed.column("samples").to_pylist()
    for bucket, event_time, cell in zip(buckets, routed.column("event_time").to_pylist(), cells, strict=True):
        rows = unpack([cell])
        assert rows.schema.equals(route.OPERATOR_SCHEMA)
        live = [r for r in rows.to_pylist() if r["role"] != route.DEAD]
        assert all(r["sid"] % 16 == bucket for r in live), "a sample sits in its series' bucket"
        dead += [json.loads(r["dead_letter"]) for r in rows.to_pylist() if r["role"] == route.DEAD]
        newest = max((r["ts"] for r in live), default=None)
        assert event_time == (None if newest is None else dt.datetime.fromtimestamp(newest / 1000, dt.UTC))
        values_in_bucket = [r["value"] for r in live]
        assert values_in_bucket == sorted(values_in_bucket), "records keep their order within a bucket"
        seen += values_in_bucket
    assert sorted(seen) == [float(i) for i in range(300) if i != 17], "every valid sample exactly once"
    assert sorted((d["source_offset"], d["error"]) for d in dead) == [
        (117, "not a JSON object"),
        (140, "empty record (null value)"),
    ]
    assert {d["cluster"] for d in dead} == {"job"}, "a record that cannot tell its cluster gets the job's"
    assert {d["received_at"] for d in dead} == {int(KAFKA_TIME.timestamp() * 1000)}, "the Kafka timestamp"


def test_a_dead_letter_that_names_its_cluster_keeps_it() -> None:
    wrong_type = json.loads(_sample(LABELS[0], cluster="prod"))
    wrong_type["value"] = "high"
    rows, _ = route.operator_rows(_decoded([json.dumps(wrong_type).encode()]), cluster="job", lag_routing=False)
    (letter,) = rows.column("dead_letter").to_pylist()
    assert json.loads(letter)["cluster"] == "prod"
    assert json.loads(letter)["error"].startswith("wrong field type: value")


def test_without_lag_analytics_lag_samples_are_plain_metric_series() -> None:
    decoded = _decoded([_sample(labels) for labels in LABELS])
    rows, buckets = route.operator_rows(decoded, cluster=None, lag_routing=False)
    assert set(rows.column("role").to_pylist()) == {route.METRIC}
    assert buckets.tolist() == [sid % 16 for sid in rows.column("sid").to_pylist()]


#: Broker event samples (JMX per broker, admin cluster-wide) and their look-alikes that are not.
BROKER_LABELS: list[dict[str, Any]] = [
    {"source": "jmx", "metric": "under_replicated_partitions", "kind": "gauge", "broker": "1"},
    {"source": "prom", "metric": "isr_shrinks_total", "kind": "counter", "broker": "2"},
    {"source": "jmx", "metric": "active_controller_count", "kind": "gauge", "broker": "1"},
    {"source": "admin", "metric": "offline_partitions", "kind": "gauge"},
    {"source": "admin", "metric": "under_replicated_partitions", "kind": "gauge", "topic": "t"},  # per topic: no
    {"source": "jmx", "metric": "isr_expands_total", "kind": "counter", "broker": "1"},  # not an event metric
]


def test_broker_event_samples_go_to_their_series_bucket_and_as_broker_copies_to_every_bucket(spark: Any) -> None:
    """The broker event samples are chosen as Spark would choose them, and each has its series'
    own sid in all STATE_BUCKETS copies; the routed rows count the records without the copies."""
    from pyspark.sql import functions as F

    from lagwatch.vocabulary import BROKER_EVENT_METRICS, TARGET_SOURCES

    samples = [_sample(labels, ts=TS + i, value=float(i)) for i, labels in enumerate([*LABELS, *BROKER_LABELS])]
    decoded = _decoded(samples)
    rows, buckets = route.operator_rows(decoded, cluster=None, lag_routing=True)

    frame = spark.createDataFrame(decoded.select([*SERIES_COLUMNS, "value"]).to_pandas())
    text = F.concat_ws("\u001f", *[F.coalesce(F.col(c).cast("string"), F.lit("\u0000")) for c in SERIES_COLUMNS])
    is_event = (
        F.col("source").isin(*TARGET_SOURCES) & F.col("metric").isin(*BROKER_EVENT_METRICS) & F.col("topic").isNull()
    )
    expected = frame.where(is_event).select(F.xxhash64(text).alias("sid"), "value").collect()
    assert [row.value for row in expected] == [7.0, 8.0, 9.0, 10.0], "JMX, Prometheus and the admin cluster gauge"

    count = len(samples)
    assert rows.column("role")[:count].to_pylist() == [0, 0, 0, 1, 1, 1, 0] + [route.METRIC] * len(BROKER_LABELS)
    copies = rows.slice(count).to_pylist()
    assert {row["role"] for row in copies} == {route.BROKER}
    copy_buckets: dict[tuple[int, float], list[int]] = {}
    for copy, bucket in zip(copies, buckets[count:].tolist(), strict=True):
        copy_buckets.setdefault((copy["sid"], copy["value"]), []).append(bucket)
    every_bucket = list(range(route.STATE_BUCKETS))
    expected_buckets = {(row.sid, row.value): every_bucket for row in expected}
    assert {key: sorted(found) for key, found in copy_buckets.items()} == expected_buckets
    originals = {row["sid"]: row["series_key"] for row in rows.slice(0, count).to_pylist()}
    assert all(originals[c["sid"]] == c["series_key"] for c in copies), "a copy carries its series' labels"

    routed = route.route(decoded, cluster=None, lag_routing=True)
    assert sorted(routed.column("bucket").to_pylist()) == list(range(route.STATE_BUCKETS)), "every bucket gets some"
    assert sum(routed.column("records").to_pylist()) == count, "the copies are not records"
    assert len(unpack(routed.column("samples").to_pylist())) == count + len(expected) * route.STATE_BUCKETS


def test_without_lag_analytics_there_are_no_broker_copies() -> None:
    decoded = _decoded([_sample(labels) for labels in BROKER_LABELS])
    rows, _ = route.operator_rows(decoded, cluster=None, lag_routing=False)
    assert rows.num_rows == len(BROKER_LABELS)


def test_topic_retention_settings_go_to_their_series_bucket_and_as_topic_copies_to_every_bucket() -> None:
    """Every group that reads a topic judges its retention margin by the topic's settings, and
    groups live in every bucket; the routed rows count the records without the copies."""
    settings = [
        {"source": "admin", "metric": "topic_retention_ms", "kind": "gauge", "topic": "orders"},
        {"source": "admin", "metric": "topic_retention_bytes", "kind": "gauge", "topic": "orders"},
        {"source": "admin", "metric": "topic_cleanup_policy", "kind": "gauge", "topic": "orders"},
        {"source": "admin", "metric": "topic_partitions", "kind": "gauge", "topic": "orders"},  # not a setting
    ]
    samples = [_sample(labels, ts=TS + i, value=float(i)) for i, labels in enumerate(settings)]
    decoded = _decoded(samples)
    rows, buckets = route.operator_rows(decoded, cluster=None, lag_routing=True)

    assert rows.column("role")[:4].to_pylist() == [route.METRIC] * 4
    copies = rows.slice(4).to_pylist()
    assert {row["role"] for row in copies} == {route.TOPIC}
    copied: dict[float, list[int]] = {}
    for copy, bucket in zip(copies, buckets[4:].tolist(), strict=True):
        copied.setdefault(copy["value"], []).append(bucket)
    assert {value: sorted(found) for value, found in copied.items()} == {
        value: list(range(route.STATE_BUCKETS)) for value in (0.0, 1.0, 2.0)
    }
    routed = route.route(decoded, cluster=None, lag_routing=True)
    assert sum(routed.column("records").to_pylist()) == 4, "the copies are not records"
    no_lag_rows, _ = route.operator_rows(decoded, cluster=None, lag_routing=False)
    assert no_lag_rows.num_rows == 4, "without lag analytics nobody needs the copies"
