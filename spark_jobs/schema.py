"""Spark schemas at the Spark job's edges.

Every Kafka source yields KAFKA_RECORD_SCHEMA rows. PARSED_SAMPLE_SCHEMA is contract 1 as
Spark types plus `event_time`: the decoder's Arrow schema matches it (``decode.ARROW_SCHEMA``),
``route.py`` accepts its rows as well as the decoder's, and the tests craft micro-batches of
samples in it (``tests/spark_jobs/conftest.py``), so windows and lag are tested without Kafka.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BinaryType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

#: What every Kafka source (Python data source or native format("kafka")) yields.
KAFKA_RECORD_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
)

#: A valid sample after parsing: contract 1 fields plus `event_time` (ts as a UTC timestamp).
PARSED_SAMPLE_SCHEMA = StructType(
    [
        StructField("v", IntegerType()),
        StructField("id", StringType()),
        StructField("ts", LongType()),
        StructField("event_time", TimestampType()),
        StructField("cluster", StringType()),
        StructField("source", StringType()),
        StructField("collector", StringType()),
        StructField("metric", StringType()),
        StructField("kind", StringType()),
        StructField("value", DoubleType()),
        StructField("broker", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("group_id", StringType()),
        StructField("client_id", StringType()),
        StructField("member_id", StringType()),
        StructField("host", StringType()),
    ]
)

#: The dead_letters columns the decoder adds beside the sample's (NULL on valid samples, except
#: `error`, which is NULL exactly there). `cluster` is the sample's own column.
DEAD_LETTER_COLUMNS: tuple[str, ...] = (
    "received_at",
    "source_topic",
    "source_partition",
    "source_offset",
    "raw",
    "error",
)
