"""Parsing and validation after Spark's native source: every kind of malformed record becomes a
dead letter with its reason, in the same packed frame as the valid samples."""

from __future__ import annotations

import datetime as dt
import json
from types import SimpleNamespace
from typing import Any

from lagwatch.samples import make_sample
from spark_jobs.decode import DEAD_LETTER_RAW_CHARS, DECODED_SCHEMA
from spark_jobs.packed import PACKED_SCHEMA, unpack
from spark_jobs.parse import parse_records
from spark_jobs.schema import KAFKA_RECORD_SCHEMA

MAX_BYTES = 1024
TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _valid(ts: int = TS, value: float = 1.5) -> dict[str, Any]:
    sample = make_sample(
        ts=ts,
        cluster="prod",
        source="admin",
        collector="c",
        metric="consumer_lag",
        kind="gauge",
        value=value,
        group_id="g",
        topic="t",
        partition=3,
    )
    return json.loads(sample.to_json())


def _malformed() -> dict[str, bytes | None]:
    """reason fragment -> raw record value."""
    good = _valid()
    return {
        "not a JSON object": b"this is not json",
        "empty record": None,
        "wrong field type": json.dumps({**good, "value": "high"}).encode(),
        "missing field(s): metric": json.dumps({k: v for k, v in good.items() if k != "metric"}).encode(),
        "unsupported schema version v=2": json.dumps({**good, "v": 2}).encode(),
        "value is not finite": json.dumps({**good, "value": float("nan")}).encode(),  # json.dumps writes NaN
        "not finite (NaN or Infinity)": json.dumps({**good, "value": float("inf")}).encode(),
        "oversized": json.dumps({**good, "collector": "x" * (MAX_BYTES * 5)}).encode(),
        "unknown source 'smoke'": json.dumps({**good, "source": "smoke"}).encode(),
        "unknown kind 'histogram'": json.dumps({**good, "kind": "histogram"}).encode(),
    }


def _parsed(spark: Any, values: list[bytes | None]) -> tuple[Any, list[Any], list[Any]]:
    """parse_records over the values: (the unpacked table, its valid samples, its dead letters)."""
    frame = parse_records(_records(spark, values), max_record_bytes=MAX_BYTES)
    assert frame.schema.fieldNames() == PACKED_SCHEMA.names
    table = unpack(row.samples for row in frame.collect())
    rows = [SimpleNamespace(**record) for record in table.to_pylist()]
    return table, [r for r in rows if r.error is None], [r for r in rows if r.error is not None]


def _records(spark: Any, values: list[bytes | None]) -> Any:
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    rows = [(b"k", v, "samples", 0, offset, when) for offset, v in enumerate(values)]
    return spark.createDataFrame(rows, KAFKA_RECORD_SCHEMA)


def test_valid_samples_are_typed_and_bad_ones_become_dead_letters(spark: Any) -> None:
    bad = _malformed()
    values = [json.dumps(_valid(TS, 1.0)).encode(), *bad.values(), json.dumps(_valid(TS + 1000, 2.0)).encode()]
    table, samples, dead_letters = _parsed(spark, values)

    assert table.schema.equals(DECODED_SCHEMA)
    assert sorted(s.value for s in samples) == [1.0, 2.0]
    assert all(s.raw is None and s.source_offset is None for s in samples), "a valid sample carries no raw text"
    assert samples[0].ts == TS
    assert (samples[0].group_id, samples[0].partition, samples[0].source) == ("g", 3, "admin")

    dead = {row.source_offset: row for row in dead_letters}
    assert sorted(dead) == list(range(1, len(bad) + 1)), "every malformed record, and only those"
    for offset, (reason, raw) in enumerate(bad.items(), start=1):
        row = dead[offset]
        assert reason in row.error, f"offset {offset}: {row.error!r} should mention {reason!r}"
        assert (row.source_topic, row.source_partition) == ("samples", 0)
        if raw is not None and len(raw) <= DEAD_LETTER_RAW_CHARS:
            assert row.raw == raw.decode()
    assert dead[1].cluster is None, "a record that cannot tell its cluster (route.py gives it the job's)"
    assert dead[3].cluster == "prod", "a readable record keeps its own cluster"


def test_oversized_raw_text_is_truncated_and_says_so(spark: Any) -> None:
    huge = json.dumps({**_valid(), "collector": "y" * (DEAD_LETTER_RAW_CHARS * 3)}).encode()
    _, samples, (row,) = _parsed(spark, [huge])
    assert samples == []
    assert row.error.startswith(f"oversized: {len(huge)} bytes")
    assert row.raw.startswith(huge[:100].decode())
    assert f"truncated to {DEAD_LETTER_RAW_CHARS} of {len(huge)} characters" in row.raw
    assert len(row.raw) < DEAD_LETTER_RAW_CHARS + 100


def test_the_job_plan_parses_each_record_once(spark: Any) -> None:
    """Parse → route → stateful operator, as the job builds it: one decode per record, no from_json.

    A projection Spark duplicates, or a filter pushed below the decoder, would decode again;
    this guards the job's plan against that (with from_json it once made 50 parses a record).
    """
    from lagwatch.config import LagConfig
    from spark_jobs.rollups import rollups
    from spark_jobs.route import routed

    records = parse_records(_records(spark, [json.dumps(_valid()).encode()]), MAX_BYTES)
    plan = rollups(routed(records, "prod", True), 30, LagConfig())._jdf.queryExecution().optimizedPlan().toString()
    assert plan.count("MapInArrow") == 2, plan  # decode, then route to the state buckets
    assert plan.count("MapInArrow partial(value#") == 1, plan  # only the decoder reads the records
    assert "from_json(" not in plan, plan
