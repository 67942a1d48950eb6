"""Raw Kafka records → typed samples (PARSED_SAMPLE_SCHEMA) and dead letters.

Why Spark SQL functions and no Python UDF: parsing runs on every sample, and a Python UDF
costs a round trip to a Python worker per batch of rows; `from_json` with a fixed schema plus
explicit column checks stays in the JVM (DESIGN §7 asks for ≥ 150,000 samples/s on 2 cores).

A record that fails any check becomes a `dead_letters` row carrying its raw text (truncated
to DEAD_LETTER_RAW_CHARS characters, and the row says so), the first reason it failed and its
topic/partition/offset; the query keeps running.

:func:`parse_records` returns one frame whose rows are either a valid sample (`error` NULL) or
a dead letter, so the topic is read and parsed once and both go through one query
(``rollups.py`` routes the dead letters past its state). Checks, in order: oversized, empty, not a
JSON object, wrong field types, missing fields, unknown schema version, non-finite value
(JSON has no NaN, but Python's json.dumps writes `NaN`/`Infinity` by default, and
`1e400` overflows to infinity), unknown source or kind.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from lagwatch.samples import KINDS, SCHEMA_VERSION, SOURCES
from spark_jobs.schema import DEAD_LETTER_COLUMNS, PARSED_SAMPLE_SCHEMA

#: Raw text kept in a dead letter; longer values are cut and marked as truncated.
DEAD_LETTER_RAW_CHARS = 4096
_CORRUPT = "_corrupt_record"
#: Fields every sample must carry (labels may be null).
REQUIRED_FIELDS: tuple[str, ...] = ("v", "id", "ts", "cluster", "source", "collector", "metric", "kind", "value")
#: The JSON fields of contract 1: PARSED_SAMPLE_SCHEMA minus the derived event_time.
JSON_SCHEMA = StructType(
    [f for f in PARSED_SAMPLE_SCHEMA.fields if f.name != "event_time"] + [StructField(_CORRUPT, StringType())]
)
_JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT, "allowNonNumericNumbers": "true"}


def parse_records(records: DataFrame, cluster: str, max_record_bytes: int) -> DataFrame:
    """KAFKA_RECORD_SCHEMA rows → PARSED_SAMPLE_SCHEMA + DEAD_LETTER_COLUMNS, one row per record.

    A valid sample has `error` NULL and NULL dead-letter columns (its raw text is not carried
    on); a dead letter has NULL sample columns except `cluster` (its own if readable, else the
    job's). Streaming-safe.
    """
    checked = check_records(records, max_record_bytes)
    valid = F.col("error").isNull()
    fields = [f.name for f in PARSED_SAMPLE_SCHEMA.fields if f.name not in ("event_time", "cluster")]
    dead = {name: F.when(~valid, column) for name, column in _dead_letter_columns().items()}
    return checked.select(
        *[F.when(valid, F.col(f"j.{name}")).alias(name) for name in fields],
        F.when(valid, F.timestamp_millis("j.ts")).alias("event_time"),
        F.coalesce(F.col("j.cluster"), F.lit(cluster)).alias("cluster"),
        *[column.alias(name) for name, column in dead.items()],
        F.col("error"),
    ).select(*PARSED_SAMPLE_SCHEMA.names, *DEAD_LETTER_COLUMNS)


def check_records(records: DataFrame, max_record_bytes: int) -> DataFrame:
    """Parse the JSON (records over the size limit are not parsed at all) and name the first error.

    `j` is referenced by every check and output column, yet parsed once per record: Spark does not
    collapse a projection into the next when that would repeat an expensive expression. A filter
    on `error` placed after this would be pushed below the projection and parse again, so the
    job never filters here (``rollups`` routes rows by `error` in a projection); the plan test in
    tests/spark_jobs/test_parse.py holds the job to one parse.
    """
    size = F.octet_length("value")
    text = F.make_valid_utf8(F.col("value").cast("string"))
    parsed = records.select(
        "topic",
        "partition",
        "offset",
        "timestamp",
        size.alias("size"),
        text.alias("text"),
        F.from_json(F.when(size <= max_record_bytes, text), JSON_SCHEMA, _JSON_OPTIONS).alias("j"),
    )
    return parsed.withColumn("error", _first_error(max_record_bytes))


def _first_error(max_record_bytes: int) -> Column:
    j = "j."
    all_null = F.lit(True)
    for name in JSON_SCHEMA.names:
        if name != _CORRUPT:
            all_null = all_null & F.col(j + name).isNull()
    missing = F.concat_ws(", ", *[F.when(F.col(j + n).isNull(), F.lit(n)) for n in REQUIRED_FIELDS])
    value = F.col(j + "value")
    return (
        F.when(F.col("text").isNull(), F.lit("empty record (null value)"))
        .when(
            F.col("size") > max_record_bytes,
            F.format_string(f"oversized: %d bytes > spark.max_record_bytes {max_record_bytes}", F.col("size")),
        )
        .when(F.col(j + _CORRUPT).isNotNull() & all_null, F.lit("not a JSON object"))
        .when(F.col(j + _CORRUPT).isNotNull(), F.concat(F.lit("wrong field type (unreadable: "), missing, F.lit(")")))
        .when(F.length(missing) > 0, F.concat(F.lit("missing field(s): "), missing))
        .when(
            F.col(j + "v") != SCHEMA_VERSION,
            F.format_string(f"unsupported schema version v=%d (this job reads v={SCHEMA_VERSION})", F.col(j + "v")),
        )
        .when(F.isnan(value) | F.abs(value).eqNullSafe(float("inf")), F.lit("value is not finite (NaN or Infinity)"))
        .when(~F.col(j + "source").isin(*SOURCES), F.format_string("unknown source '%s'", F.col(j + "source")))
        .when(~F.col(j + "kind").isin(*KINDS), F.format_string("unknown kind '%s'", F.col(j + "kind")))
    )


def _dead_letter_columns() -> dict[str, Column]:
    """dead_letters values of a checked record (all but cluster and error).

    `received_at` is the Kafka timestamp, so a replayed batch is identical; raw text is cut at
    DEAD_LETTER_RAW_CHARS characters and says so.
    """
    truncated = F.length("text") > DEAD_LETTER_RAW_CHARS
    raw = F.when(
        truncated,
        F.concat(
            F.substring("text", 1, DEAD_LETTER_RAW_CHARS),
            F.format_string(f"… [truncated to {DEAD_LETTER_RAW_CHARS} of %d characters]", F.length("text")),
        ),
    ).otherwise(F.col("text"))
    return {
        "received_at": F.coalesce(F.col("timestamp"), F.current_timestamp()),
        "source_topic": F.col("topic"),
        "source_partition": F.col("partition"),
        "source_offset": F.col("offset"),
        "raw": raw,
    }
