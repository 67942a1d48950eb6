"""The floor of `lagwatch up`'s footprint: the demo stack with every Spark setting that saves
memory taken at once, to tell what the configuration can still cut from what it cannot.

Leaned: Spark's native Kafka source (no data-source runner or planner daemons; the connector
from SPARK_KAFKA_JARS, as `make bench` unpacks it), a `local[1]` master (one core's tasks) and
a 512m driver heap ceiling. Everything else as shipped; same steady wait as bench_footprint.
"""

from __future__ import annotations

from functools import partial

from bench.bench_footprint import measure
from bench.common import Result
from harness.local_stack import LocalStack
from harness.spark_kafka import spark_kafka_jars


def lean_settings(connector_jars: str) -> dict[str, str]:
    """The `[spark]` keys of the lean run, as TOML values."""
    return {
        "master": '"local[1]"',
        "source": '"kafka"',
        "jars": f'["{connector_jars}"]',
        "conf": '{ "spark.driver.memory" = "512m" }',
    }


def run() -> list[Result]:
    return measure("lean demo", partial(LocalStack, spark_settings=lean_settings(str(spark_kafka_jars()))))
