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

from lagwatch.config import Config, ConfigError
from lagwatch.kafka import transport_client_config
from spark_jobs import kafka_source, route
from spark_jobs.kafka_options import java_client_options
from spark_jobs.parse import parse_records
from spark_jobs.schema import KAFKA_RECORD_SCHEMA

#: What Spark says when `format("kafka")` finds no connector (error condition
#: KAFKA_DATA_SOURCE_NOT_ENABLED in Spark 4).
CONNECTOR_MISSING = "Failed to find data source: kafka"


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
    """Spark's own Kafka source; the librdkafka client settings become Java client options
    (``kafka_options.py``). A classpath without the connector is a ConfigError saying how to add it."""
    client = java_client_options(transport_client_config(config), config.spark.kafka_options)
    reader = (
        spark.readStream.format("kafka")
        .option("subscribe", config.transport.samples_topic)
        .option("startingOffsets", config.spark.starting_offsets)
        .option("maxOffsetsPerTrigger", str(config.spark.max_rows_per_batch))
        .option("failOnDataLoss", "false")
    )
    for key, value in client.items():
        reader = reader.option(f"kafka.{key}", value)
    try:
        frame = reader.load()
    except Exception as exc:  # pyspark's AnalysisException; its condition names the missing connector
        if CONNECTOR_MISSING not in str(exc):
            raise
        raise ConfigError(connector_missing_message(spark.version)) from None
    return frame.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in KAFKA_RECORD_SCHEMA.fields])


def connector_coordinates(spark_version: str) -> str:
    """The Maven coordinates of the Kafka connector for this Spark (every Spark 4 is Scala 2.13)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version}"


def connector_missing_message(spark_version: str) -> str:
    coordinates = connector_coordinates(spark_version)
    return (
        '[spark] source = "kafka" needs Spark\'s Kafka connector (spark-sql-kafka-0-10) on the classpath, and '
        f'Spark {spark_version} did not find it. With Maven Central: set [spark] packages = ["{coordinates}"] '
        f'(spark-submit: --packages {coordinates}). Without: set [spark] jars = ["/path/to/jars"], a folder '
        "holding the connector and the jars it needs beside Spark's (kafka-clients, commons-pool2, …; "
        'spark-submit: --jars). Or set [spark] source = "python", which needs no jar.'
    )


def routed_samples(spark: Any, config: Config) -> DataFrame:
    """The configured source's records, decoded and routed (``route.ROUTED_DDL``), lag routing on:
    the job always runs lag analytics."""
    if config.spark.source == "kafka":
        packed = parse_records(native_source(spark, config), config.spark.max_record_bytes)
        return route.routed(packed, config.cluster.name, lag_routing=True)
    return python_source(spark, config)
