"""The batch decoder alone (pyarrow, no Spark): bad records are found among many good ones."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa

from lagwatch.samples import make_sample
from spark_jobs.decode import ARROW_SCHEMA, DECODED_SCHEMA, SLOW_CHUNK, decode_batch
from spark_jobs.schema import PARSED_SAMPLE_SCHEMA

TS = 1_767_225_600_000


def _sample(value: float, cluster: str = "prod") -> dict[str, Any]:
    sample = make_sample(
        ts=TS, cluster=cluster, source="jmx", collector="c", metric="messages_in_total", kind="counter", value=value
    )
    return json.loads(sample.to_json())


def _decode(values: list[bytes | None], max_bytes: int = 4096) -> list[dict[str, Any]]:
    size = len(values)
    records = pa.RecordBatch.from_pydict(
        {
            "value": pa.array(values, pa.binary()),
            "topic": ["samples"] * size,
            "partition": pa.array([0] * size, pa.int32()),
            "offset": pa.array(range(size), pa.int64()),
            "timestamp": pa.array([TS * 1000] * size, pa.timestamp("us", tz="UTC")),
        }
    )
    decoded = decode_batch(records, max_bytes)
    assert decoded.schema == DECODED_SCHEMA
    return decoded.to_pylist()


def test_the_arrow_schema_is_the_parsed_sample_schema() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    fields = StructType([f for f in PARSED_SAMPLE_SCHEMA.fields if f.name != "event_time"])
    assert ARROW_SCHEMA.remove_metadata() == to_arrow_schema(fields).remove_metadata()


def test_bad_records_among_many_good_ones_are_found_and_the_good_keep_their_place() -> None:
    good = [json.dumps(_sample(float(i))).encode() for i in range(3000)]
    bad = {
        "not a JSON object": b"{not json",
        "wrong field type: partition (expected a 32-bit integer)": json.dumps(
            {**_sample(1), "partition": 2**40}
        ).encode(),
        "wrong field type: value (expected a number)": json.dumps({**_sample(1), "value": "high"}).encode(),
        "value is not finite (NaN or Infinity)": json.dumps({**_sample(1), "value": float("nan")}).encode(),
        "missing field(s): v, id, ts, cluster, source, collector, metric, kind, value": b"{}{}",
    }
    values: list[bytes | None] = list(good)
    where = sorted(random.Random(7).sample(range(len(good)), 40))
    expected: dict[int, str] = {}
    for n, index in enumerate(where):
        reason, raw = list(bad.items())[n % len(bad)]
        values[index] = raw
        expected[index] = reason
    # {}{} is two objects on one line: the batch reader's row count gives it away; read alone it is not JSON.
    expected = {i: ("not a JSON object" if values[i] == b"{}{}" else r) for i, r in expected.items()}
    rows = _decode(values)

    assert {i: r["error"] for i, r in enumerate(rows) if r["error"]} == expected
    for index, row in enumerate(rows):
        if index not in expected:
            assert row["value"] == float(index) and row["raw"] is None and row["source_offset"] is None
        else:
            assert row["value"] is None and row["raw"] == values[index].decode() and row["source_offset"] == index


def test_what_the_batch_reader_cannot_read_is_read_alone() -> None:
    pretty = json.dumps(_sample(2.0), indent=2).encode()  # line breaks inside: valid JSON all the same
    indented = b"  " + json.dumps(_sample(3.0)).encode()
    broken_utf8 = json.dumps(_sample(4.0, cluster="X")).encode().replace(b'"X"', b'"\xff"')
    rows = _decode([json.dumps(_sample(1.0)).encode(), pretty, indented, broken_utf8] + [b"   "] * SLOW_CHUNK)

    assert [row["value"] for row in rows[:4]] == [1.0, 2.0, 3.0, 4.0]
    assert [row["error"] for row in rows[:4]] == [None] * 4
    assert rows[3]["cluster"] == "\ufffd", "invalid UTF-8 is replaced, the sample kept"
    assert {row["error"] for row in rows[4:]} == {"not a JSON object"}


def test_a_record_with_a_wrong_field_type_keeps_its_readable_cluster() -> None:
    (row,) = _decode([json.dumps({**_sample(1.0, cluster="east"), "ts": "yesterday", "v": True}).encode()])
    assert row["error"] == "wrong field type: v (expected a 32-bit integer), ts (expected a 64-bit integer)"
    assert row["cluster"] == "east" and row["value"] is None


def test_checks_run_in_order_and_name_the_value() -> None:
    base = _sample(1.0)
    oversized = json.dumps({**base, "collector": "x" * 5000}).encode()
    rows = _decode(
        [
            None,
            oversized,
            json.dumps({**base, "v": 2, "kind": "histogram"}).encode(),
            json.dumps({**base, "source": "smoke", "kind": "histogram"}).encode(),
            json.dumps({**base, "kind": "histogram"}).encode(),
            json.dumps({k: v for k, v in base.items() if k not in ("metric", "id")}).encode(),
        ]
    )
    assert [row["error"] for row in rows] == [
        "empty record (null value)",
        f"oversized: {len(oversized)} bytes > spark.max_record_bytes 4096",
        "unsupported schema version v=2 (this job reads v=1)",
        "unknown source 'smoke'",
        "unknown kind 'histogram'",
        "missing field(s): id, metric",
    ]


def test_large_arrow_types_are_read_as_well() -> None:
    """What Spark sends with spark.sql.execution.arrow.useLargeVarTypes on."""
    values = [json.dumps(_sample(5.0)).encode(), b"oops"]
    records = pa.RecordBatch.from_pydict(
        {
            "value": pa.array(values, pa.large_binary()),
            "topic": pa.array(["samples"] * 2, pa.large_string()),
            "partition": pa.array([1, 1], pa.int32()),
            "offset": pa.array([10, 11], pa.int64()),
            "timestamp": pa.array([TS * 1000] * 2, pa.timestamp("us", tz="Europe/Paris")),
        }
    )
    rows = decode_batch(records, 4096).to_pylist()
    assert [(r["value"], r["error"]) for r in rows] == [(5.0, None), (None, "not a JSON object")]
    assert (rows[1]["source_topic"], rows[1]["source_offset"], rows[1]["raw"]) == ("samples", 11, "oops")
    assert rows[1]["received_at"].timestamp() * 1000 == TS
