"""The SparkSession for the streaming job, built from `[spark]` in the config.

Why these defaults: `spark.sql.shuffle.partitions` is frozen into the checkpoint at the first
start, and Spark's default of 200 makes small batches an order of magnitude slower on 2 cores
(docs/performance.md), so it defaults to the master's core count; the UI is off unless
configured (a port nobody asked for); the session zone is UTC so timestamps are never
shifted; Arrow is on because the lake writer converts every batch to Arrow.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from lagwatch.config import Config

log = logging.getLogger(__name__)

APP_NAME = "lagwatch-stream"
#: JVM options of the driver and executors (one JVM in local mode): the quick (C1) compiler only.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def master_cores(master: str) -> int:
    """Cores a `local[N]` / `local[*]` master gives; for a cluster master, this machine's count."""
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master.strip())
    if match and match.group(1) != "*":
        return max(1, int(match.group(1)))
    if master.strip() == "local":
        return 1
    return os.cpu_count() or 2


def session_settings(config: Config) -> dict[str, str]:
    """Spark settings for the job: the defaults above, overridden by `[spark.conf]`."""
    settings = {
        "spark.sql.shuffle.partitions": str(master_cores(config.spark.master)),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # progress bars would garble the job's log lines
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Rows per Arrow batch sent to a Python worker. Samples travel packed (packed.py), so this
        # now matters where raw records meet the decoder after Spark's native Kafka source: one
        # packed cell per 50,000 records (the default 10,000 was slower, docs/performance.md).
        "spark.sql.execution.arrow.maxRecordsPerBatch": "50000",
        # Python workers connect back within this time; 15 s (the default) failed on a loaded 2-core box.
        "spark.python.authenticate.socketTimeout": "120s",
        # The JVM only moves packed cells and keeps offsets and state here; Python does the work.
        # HotSpot's optimising compiler (C2) still compiled all run long, so the quick compiler
        # alone is cheaper here (docs/performance.md).
        # Spark reads these when it starts the JVM: `lagwatch stream` does, spark-submit does not
        # (pass --driver-java-options there).
        "spark.driver.extraJavaOptions": JAVA_OPTIONS,
        "spark.executor.extraJavaOptions": JAVA_OPTIONS,
    }
    settings.update({str(k): str(v) for k, v in config.spark.conf.items()})
    return settings


def _python_path_for_workers() -> None:
    """Python workers must import spark_jobs/lagwatch (the data source and the stateful functions
    are pickled by reference); an editable install's import hook is not seen by every worker, so
    the project root goes on PYTHONPATH, which local-mode workers inherit."""
    root = str(Path(__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


def build_session(config: Config) -> Any:
    """Start (or reuse) the SparkSession; executors' Python is this interpreter unless set."""
    from pyspark.sql import SparkSession

    _python_path_for_workers()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(config.spark.master).appName(APP_NAME)
    for key, value in session_settings(config).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    log.info(
        "Spark %s session on %s (%s shuffle partitions)",
        spark.version,
        config.spark.master,
        spark.conf.get("spark.sql.shuffle.partitions"),
    )
    return spark
