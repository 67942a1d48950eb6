"""The job's Spark settings: the defaults reach the JVM, and `[spark.conf]` wins over them."""

from __future__ import annotations

from typing import Any

from lagwatch.config import parse_config
from spark_jobs.session import JAVA_OPTIONS, master_cores, session_settings


def test_the_running_jvm_uses_the_jobs_java_options(spark: Any) -> None:
    """The session fixture is built from session_settings, so this is the JVM the job would get."""
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    assert JAVA_OPTIONS in arguments, arguments


def test_spark_conf_overrides_the_jobs_defaults() -> None:
    config = parse_config(
        {
            "cluster": {"name": "test"},
            "spark": {"master": "local[3]", "conf": {"spark.driver.extraJavaOptions": "-Xss4m"}},
        }
    )
    settings = session_settings(config)
    assert settings["spark.driver.extraJavaOptions"] == "-Xss4m"
    assert settings["spark.executor.extraJavaOptions"] == JAVA_OPTIONS
    assert settings["spark.sql.shuffle.partitions"] == "3"


def test_master_cores_reads_local_masters_and_falls_back_to_this_machine() -> None:
    assert master_cores("local[4]") == 4
    assert master_cores("local") == 1
    assert master_cores("spark://host:7077") >= 1
