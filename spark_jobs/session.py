"""The SparkSession for the streaming job, built from `[spark]` in the config.

Why these defaults: `spark.sql.shuffle.partitions` is frozen into the checkpoint at the first
start, and Spark's default of 200 makes small batches far slower on a few cores
(bench/RECORDS.md, "Spark job"), so it defaults to the master's core count; the UI is off
unless configured (a port nobody asked for); the session zone is UTC so timestamps are never
shifted; Arrow is on because the lake writer converts every batch to Arrow.

On a cluster master (anything but `local…`) the executors run in JVMs of their own, on other
hosts, and import the data source and the stateful functions by name: the session ships the
project's packages to them as a zip (:func:`ship_project`), built from the code the driver runs.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

from lagwatch.config import Config, ConfigError

log = logging.getLogger(__name__)

APP_NAME = "lagwatch-stream"
#: The packages executors import (the data source, decode/route, the stateful operator, and the
#: contracts they use). The other parts (collectors, dashboard) never run there.
SHIPPED_PACKAGES = ("lagwatch", "spark_jobs")
#: JVM options of the driver and executors (one JVM in local mode): the quick (C1) compiler only.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
#: The driver JVM sized to the job, since a monitor runs for months beside what it watches: the
#: heap keeps Spark's 1g ceiling (a backlog's large batches use it) but starts small, and the
#: serial collector grows it only as the live set needs and gives memory back after a full GC
#: (G1 let it drift far above the live set), with no GC threads of its own. The thread stack keeps
#: its default: Spark formats error messages with regexes that recurse per character, and a
#: long one overflowed a halved stack and killed the query thread. The code cache and metaspace
#: get ceilings so a leak fails loudly (bench/RECORDS.md, "Footprint").
DRIVER_JAVA_OPTIONS = f"{JAVA_OPTIONS} -XX:+UseSerialGC -Xms64m -XX:ReservedCodeCacheSize=64m -XX:MaxMetaspaceSize=256m"


def is_local(master: str) -> bool:
    """`local`, `local[N]`, `local[N,F]`, `local-cluster[…]`: executors share the driver's host and files."""
    return master.strip().startswith("local")


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
        # matters only where raw records meet the decoder after Spark's native Kafka source: one
        # packed cell per 50,000 records, since Spark's default of 10,000 is slower there
        # (bench/RECORDS.md, "Spark job").
        "spark.sql.execution.arrow.maxRecordsPerBatch": "50000",
        # Python workers connect back within this time; Spark's default is too short on a loaded host
        # (bench/RECORDS.md, "Spark session settings").
        "spark.python.authenticate.socketTimeout": "120s",
        # The JVM only moves packed cells and keeps offsets and state here; Python does the work.
        # HotSpot's optimising compiler (C2) keeps compiling all run long anyway, so the quick
        # compiler alone is cheaper here (bench/RECORDS.md, "Spark job").
        # Spark reads these when it starts the JVM: `lagwatch stream` does, spark-submit does not
        # (pass --driver-java-options there).
        # Only the driver's JVM is sized here (bench/RECORDS.md, "Footprint"); executors on a
        # cluster keep their operator's sizing.
        "spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS,
        "spark.executor.extraJavaOptions": JAVA_OPTIONS,
    }
    settings.update(classpath_settings(config))
    settings.update({str(k): str(v) for k, v in config.spark.conf.items()})
    return settings


def classpath_settings(config: Config) -> dict[str, str]:
    """`spark.jars` from `[spark] jars` (each folder's *.jar files) and `spark.jars.packages` from `packages`."""
    settings: dict[str, str] = {}
    jars = [str(jar) for entry in config.spark.jars for jar in _jar_files(config.resolve_path(entry), entry)]
    if jars:
        settings["spark.jars"] = ",".join(jars)
    if config.spark.packages:
        settings["spark.jars.packages"] = ",".join(config.spark.packages)
    return settings


def _jar_files(path: Path, written: str) -> list[Path]:
    """A jar, or every jar in a folder; anything else is a ConfigError naming the entry, since Spark
    would start without it and fail only when a class is missing."""
    if path.is_dir():
        found = sorted(path.glob("*.jar"))
        if not found:
            raise ConfigError(f"spark.jars: {written!r} ({path}) holds no .jar file")
        return found
    if path.is_file() and path.suffix == ".jar":
        return [path]
    raise ConfigError(f"spark.jars: {written!r} ({path}) is neither a .jar file nor a folder of them")


def _python_path_for_workers() -> None:
    """Python workers must import spark_jobs/lagwatch (the data source and the stateful functions
    are pickled by reference); an editable install's import hook is not seen by every worker, so
    the project root goes on PYTHONPATH, which local-mode workers inherit."""
    root = str(project_root())
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])


def project_root() -> Path:
    return Path(__file__).resolve().parent.parent


def project_archive(directory: Path) -> Path | None:
    """A zip of SHIPPED_PACKAGES' Python files, named by a hash of their content, built once.

    None when the packages are not plain files (the driver itself imports them from a zip, as
    under `spark-submit --py-files`, which ships them already). Named by content, the zip is
    built once per version of the code and never rewritten while another driver serves it.
    """
    root = project_root()
    if not all((root / package / "__init__.py").is_file() for package in SHIPPED_PACKAGES):
        return None
    files = sorted(f for package in SHIPPED_PACKAGES for f in (root / package).rglob("*.py"))
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    target = directory / f"lagwatch-{digest.hexdigest()[:16]}.zip"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in files:
                archive.write(file, file.relative_to(root).as_posix())
        partial.replace(target)
    return target


def ship_project(spark: Any, directory: Path) -> Path | None:
    """Send the project's packages to every executor (`SparkContext.addPyFile`).

    Why addPyFile and not a `spark.submit.pyFiles` setting on the builder: under spark-submit
    the JVM is already running, so that setting would only replace the user's `--py-files` list
    instead of shipping anything; addPyFile ships the file in both cases, and puts it on the
    Python path of every task, including the data source's reads. It must run before the data
    source is registered, which captures the list of shipped files.
    """
    archive = project_archive(directory)
    if archive is None:
        log.info("project packages are not plain files under %s: not shipping them", project_root())
        return None
    spark.sparkContext.addPyFile(str(archive))
    log.info("shipped the project to the executors as %s", archive)
    return archive


def build_session(config: Config, archive_dir: Path | None = None) -> Any:
    """Start (or reuse) the SparkSession; executors' Python is this interpreter unless set.

    On a cluster master the project's zip is built into `archive_dir` and shipped (ship_project).
    """
    from pyspark.sql import SparkSession

    _python_path_for_workers()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(config.spark.master).appName(APP_NAME)
    for key, value in session_settings(config).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not is_local(config.spark.master) and archive_dir is not None:
        ship_project(spark, archive_dir)
    log.info(
        "Spark %s session on %s (%s shuffle partitions)",
        spark.version,
        config.spark.master,
        spark.conf.get("spark.sql.shuffle.partitions"),
    )
    return spark
