"""The job's Spark settings: the defaults reach the JVM, and `[spark.conf]` wins over them."""

from __future__ import annotations

from typing import Any

from lagwatch.config import parse_config
from spark_jobs.session import DRIVER_JAVA_OPTIONS, JAVA_OPTIONS, master_cores, session_settings


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


def test_the_driver_jvm_is_sized_to_the_job_and_the_operator_can_resize_it() -> None:
    """The footprint options (bench/RECORDS.md) reach the driver only; `[spark.conf]` wins."""
    defaults = session_settings(parse_config({"cluster": {"name": "test"}}))
    driver = defaults["spark.driver.extraJavaOptions"].split()
    assert {"-XX:+UseSerialGC", "-Xms64m", "-XX:MaxMetaspaceSize=256m", *JAVA_OPTIONS.split()} <= set(driver)
    assert "-XX:+UseSerialGC" not in defaults["spark.executor.extraJavaOptions"]
    g1 = {"spark.driver.extraJavaOptions": "-XX:+UseG1GC"}
    resized = session_settings(parse_config({"cluster": {"name": "test"}, "spark": {"conf": g1}}))
    assert resized["spark.driver.extraJavaOptions"] == "-XX:+UseG1GC"
    assert defaults["spark.driver.extraJavaOptions"] == DRIVER_JAVA_OPTIONS
