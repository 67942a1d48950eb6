"""The samples stream as KAFKA_RECORD_SCHEMA rows, from whichever Kafka source is configured.

`[spark] source = "python"` (default) uses the bundled confluent-kafka data source, which needs
no jar; `"kafka"` uses Spark's native `format("kafka")` where the deployment ships
spark-sql-kafka. Both yield the same columns, so parsing and everything after it is shared.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lagwatch.config import Config
from lagwatch.kafka import transport_client_config
from spark_jobs import kafka_source
from spark_jobs.schema import KAFKA_RECORD_SCHEMA


def python_source(spark: Any, config: Config) -> DataFrame:
    kafka_source.register(spark)
    options = kafka_source.source_options(
        transport_client_config(config),
        config.transport.samples_topic,
        starting_offsets=config.spark.starting_offsets,
        max_rows_per_batch=config.spark.max_rows_per_batch,
        timeout_s=config.spark.kafka_timeout_s,
        retries=config.spark.kafka_retries,
        read_timeout_s=config.spark.kafka_read_timeout_s,
    )
    return spark.readStream.format(kafka_source.SOURCE_NAME).options(**options).load()


def native_source(spark: Any, config: Config) -> DataFrame:
    """Spark's own Kafka source; librdkafka-style client settings map to `kafka.`-prefixed options."""
    client = transport_client_config(config)
    reader = (
        spark.readStream.format("kafka")
        .option("subscribe", config.transport.samples_topic)
        .option("startingOffsets", config.spark.starting_offsets)
        .option("maxOffsetsPerTrigger", str(config.spark.max_rows_per_batch))
        .option("failOnDataLoss", "false")
    )
    for key, value in client.items():
        reader = reader.option(f"kafka.{key}", str(value))
    frame = reader.load()
    return frame.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in KAFKA_RECORD_SCHEMA.fields])


def samples_stream(spark: Any, config: Config) -> DataFrame:
    """The configured source's records, columns exactly KAFKA_RECORD_SCHEMA."""
    if config.spark.source == "kafka":
        return native_source(spark, config)
    return python_source(spark, config)
