"""`[spark]`: the streaming job: its master, Kafka source, batch sizes and outage limits."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from lagwatch.config.base import StrictModel
from lagwatch.config.secrets import JAVA_SECRET_KEYS

_MAVEN_COORDINATE = re.compile(r"[\w.-]+:[\w.-]+:[\w.+-]+")


class SparkConfig(StrictModel):
    #: Spark master URL: local[N] (N cores in this process) or a cluster's.
    master: str = "local[2]"
    #: Seconds between two micro-batches.
    trigger_s: float = Field(2, gt=0)
    #: Streaming checkpoints: a folder (relative to the config file's folder) or a Hadoop URI (hdfs://, s3a://).
    checkpoint_dir: str = "state/checkpoints"
    #: python: the bundled confluent-kafka data source; kafka: Spark's native source (needs the
    #: connector: `jars` or `packages` below, docs/operations.md "Which Kafka source").
    source: Literal["python", "kafka"] = "python"
    #: Jars put on Spark's classpath (`spark.jars`): files, or folders whose every *.jar is taken;
    #: a relative path is resolved against the config file's folder. The way to the native source's
    #: connector where Maven Central is out of reach.
    jars: list[str] = Field(default_factory=list)
    #: Maven coordinates Spark resolves and fetches at start (`spark.jars.packages`), e.g.
    #: "org.apache.spark:spark-sql-kafka-0-10_2.13:<PySpark version>".
    packages: list[str] = Field(default_factory=list)
    #: Java Kafka client settings for `source = "kafka"` only, added to those translated from the
    #: librdkafka `client` settings (these win): what librdkafka has no name for, such as a JKS
    #: truststore. Secrets are refused here; they come from the environment.
    kafka_options: dict[str, str] = Field(default_factory=dict)
    #: Where the job starts reading the samples topic when it has no checkpoint yet.
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    #: Records per micro-batch at most, when a backlog waits (live batches are far smaller). A batch
    #: has a fixed cost (a batch of a few records takes as long), which bigger batches pay less
    #: often, up to a point past which memory grows and throughput does not (bench/RECORDS.md).
    max_rows_per_batch: int = Field(1_000_000, ge=1)
    #: How far behind the newest event time a sample may arrive and still count (Spark's watermark delay).
    watermark_s: float = Field(30, ge=0)
    #: Largest sample record accepted (bytes); larger goes to dead_letters.
    max_record_bytes: int = Field(65_536, ge=256)
    #: Extra Spark settings (spark.sql.shuffle.partitions defaults to the core count).
    conf: dict[str, str] = Field(default_factory=dict)
    #: Python Kafka source: seconds per metadata request and retries before the job fails with the
    #: bootstrap servers named (bounded, never a silent stall).
    kafka_timeout_s: float = Field(10, gt=0)
    #: Python Kafka source: retries of a failed metadata request.
    kafka_retries: int = Field(2, ge=0)
    #: A running job keeps retrying an unreachable Kafka (restarting its queries from the checkpoint)
    #: this long before it exits with code 3; at start-up it fails at once.
    kafka_outage_s: float = Field(600, gt=0)
    #: Python Kafka source: a read that gets no record for this long fails its batch (naming the
    #: servers and the offset range) instead of hanging; the running job then retries as above.
    kafka_read_timeout_s: float = Field(120, gt=0)
    #: Seconds between compaction/retention passes over the lake, run in the driver.
    maintenance_interval_s: float = Field(60, gt=0)

    @field_validator("packages")
    @classmethod
    def _maven_coordinates(cls, packages: list[str]) -> list[str]:
        for package in packages:
            if not _MAVEN_COORDINATE.fullmatch(package):
                raise ValueError(f"{package!r} is not a Maven coordinate group:artifact:version")
        return packages

    @field_validator("kafka_options")
    @classmethod
    def _no_java_secrets(cls, options: dict[str, str]) -> dict[str, str]:
        for key in options:
            if key in JAVA_SECRET_KEYS or "password" in key:
                raise ValueError(
                    f"'{key}' carries a secret: set the librdkafka form through the environment "
                    "(e.g. LAGWATCH_TRANSPORT_SASL_PASSWORD), which the native source translates"
                )
        return options
