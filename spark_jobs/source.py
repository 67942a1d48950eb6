"""The parsed samples stream, from whichever Kafka source is configured.

`[spark] source = "python"` (default) uses the bundled confluent-kafka data source, which needs
no jar; `"kafka"` uses Spark's native `format("kafka")` where the deployment ships
spark-sql-kafka. Both end in the same packed frame of decoded samples (``packed.py``), decoded
by the same function (decode.decode_batch): the Python source runs it in its reader, which saves
handing every record to a second Python worker; after the native source it runs in
``mapInArrow`` (``parse.py``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lagwatch.config import Config
from lagwatch.kafka import transport_client_config
from spark_jobs import kafka_source
from spark_jobs.parse import parse_records
from spark_jobs.schema import KAFKA_RECORD_SCHEMA


def python_source(spark: Any, config: Config) -> DataFrame:
    """Packed decoded samples: the bundled source decodes in its reader (module docstring)."""
    kafka_source.register(spark)
    options = kafka_source.source_options(
        transport_client_config(config),
        config.transport.samples_topic,
        starting_offsets=config.spark.starting_offsets,
        max_rows_per_batch=config.spark.max_rows_per_batch,
        timeout_s=config.spark.kafka_timeout_s,
        retries=config.spark.kafka_retries,
        read_timeout_s=config.spark.kafka_read_timeout_s,
        decode_max_bytes=config.spark.max_record_bytes,
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


def packed_samples(spark: Any, config: Config) -> DataFrame:
    """The configured source's records, decoded and packed (``packed.PACKED_DDL``)."""
    if config.spark.source == "kafka":
        return parse_records(native_source(spark, config), config.spark.max_record_bytes)
    return python_source(spark, config)
