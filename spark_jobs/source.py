"""The parsed samples stream, from whichever Kafka source is configured.

`[spark] source = "python"` (default) uses the bundled confluent-kafka data source, which needs
no jar; `"kafka"` uses Spark's native `format("kafka")` where the deployment ships
spark-sql-kafka. Both end in the same frame of decoded samples routed to the state buckets
(``route.py``), by the same functions (decode.decode_batch, route.route): the Python source runs
them in its reader, which saves handing the records to more Python workers; after the native
source they run in ``mapInArrow`` (``parse.py``, then ``route.routed``).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lagwatch.config import Config
from lagwatch.kafka import transport_client_config
from spark_jobs import kafka_source, route
from spark_jobs.parse import parse_records
from spark_jobs.schema import KAFKA_RECORD_SCHEMA


def python_source(spark: Any, config: Config) -> DataFrame:
    """Routed decoded samples: the bundled source decodes and routes in its reader (module docstring)."""
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
        # Samples carry their own cluster; only a record that cannot tell its own is put in the
        # home cluster's (config.cluster: the first configured, whose servers carry the samples).
        route=(config.cluster.name, True),
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


def routed_samples(spark: Any, config: Config) -> DataFrame:
    """The configured source's records, decoded and routed (``route.ROUTED_DDL``), lag routing on:
    the job always runs lag analytics."""
    if config.spark.source == "kafka":
        packed = parse_records(native_source(spark, config), config.spark.max_record_bytes)
        return route.routed(packed, config.cluster.name, lag_routing=True)
    return python_source(spark, config)
