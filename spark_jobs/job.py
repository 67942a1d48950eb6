"""`lagwatch stream`: the Spark job from the samples topic to the lake.

One streaming query, ``rollups``, with its checkpoint under `[spark] checkpoint_dir`: the
samples topic → decode (valid samples and dead letters side by side, packed thousands to a
Spark row: ``packed.py``) → route to the state buckets (``route.py``) → the one stateful
operator, which drops duplicate samples and passes dead letters straight through
(:func:`spark_jobs.rollups.rollups`) → metrics_10s, metrics_1m, lag_1m, group_status and
dead_letters, written by foreachBatch (append of newest versions; readers keep the newest).
A malformed record is written in the batch that read it; it never waits for the watermark.

Why one query: reading and parsing the topic is a large share of the job's CPU; a second
query for the dead letters would pay it again. The Kafka offsets live in the checkpoint, so a kill -9 at
any moment resumes with the unfinished batch replayed into the very same files
(see lake_sink.py).

SIGTERM / SIGINT stop the queries between batches; `--available-now` processes what the topic
holds at start and exits 0. Lake compaction and retention run in the driver on a timer, and so
does the check for closed hours, whose group_status_1h and lag_1h rows ``hourly.py`` writes.

Kafka going away: at start the job fails fast (exit 3, the bootstrap servers named). Once running,
a broker outage (restart, network partition, a paused process) makes the source fail its batch
with a KafkaSourceError; the job then logs the outage and restarts the query from its checkpoint
with backoff, for up to `[spark] kafka_outage_s`, and only then exits 3. Nothing is skipped: the
restarted query resumes at the last committed offsets.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lagwatch import lake as lakelib
from lagwatch.config import Config
from lagwatch.java import require_java_for
from lagwatch.kafka import KafkaUnreachable, check_reachable, ensure_samples_topic, transport_client_config
from lagwatch.lake_maintenance import maintain_lake
from lagwatch.stop_signals import stop_on_signals
from spark_jobs.hourly import HourlyRollups

log = logging.getLogger(__name__)

ROLLUPS_QUERY = "rollups"
#: How often the driver loop wakes to check queries, signals and the maintenance timer.
POLL_S = 1.0
#: On SIGTERM, how long the driver waits for the last batch's progress row before it exits.
STOP_PROGRESS_WAIT_S = 1.0
#: Failures that say nothing about the data: Spark gives a new Python worker a fixed 10 s to
#: connect back, which a heavily loaded host can miss. The query restarts from its checkpoint.
TRANSIENT_FAILURES = ("Python worker failed to connect back",)
MAX_RESTARTS = 3
#: Longest wait between restarts while Kafka is unreachable.
KAFKA_BACKOFF_MAX_S = 10.0


#: A checkpoint_dir with a scheme (hdfs://, s3a://, file:/…) is a Hadoop filesystem URI: kept as written.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


@dataclass
class JobPaths:
    lake: Path
    duckdb: Path
    #: A local folder resolved against the config file, or a URI every executor can reach.
    checkpoints: str
    #: Local folder where the driver builds the project's zip for a cluster's executors.
    archives: Path

    @classmethod
    def of(cls, config: Config) -> JobPaths:
        configured = config.spark.checkpoint_dir
        if _URI.match(configured):
            checkpoints, archives = configured.rstrip("/"), Path(tempfile.gettempdir()) / "lagwatch-pyfiles"
        else:
            local = config.resolve_path(configured)
            checkpoints, archives = str(local), local.parent / "pyfiles"
        return cls(
            lake=config.resolve_path(config.lake.path),
            duckdb=config.resolve_path(config.lake.duckdb_path),
            checkpoints=checkpoints,
            archives=archives,
        )

    def checkpoint(self, query: str) -> str:
        return f"{self.checkpoints}/{query}"


def run(config: Config, args: argparse.Namespace) -> int:
    """Entry point of `lagwatch stream [--available-now]`; the shell has already pointed `config` at a broker."""
    available_now = bool(getattr(args, "available_now", False))
    require_java_for("the Spark job")  # before Kafka and Spark: one line, not a Java gateway traceback
    settings = transport_client_config(config)
    check_reachable(settings, timeout_s=config.spark.kafka_timeout_s)
    ensure_samples_topic(config)
    paths = JobPaths.of(config)
    lakelib.write_views_file(paths.lake, paths.duckdb)
    log.info("lake %s, views %s, checkpoints %s", paths.lake, paths.duckdb, paths.checkpoints)
    return StreamJob(config, paths, available_now).run()


@dataclass
class KafkaOutage:
    """How long the running job has been failing to reach Kafka, and when to try again."""

    limit_s: float
    started: float | None = None
    attempts: int = 0
    batches_at_start: int = 0

    def begin_or_continue(self, batches_done: int) -> None:
        if self.started is None:
            self.started, self.attempts, self.batches_at_start = time.monotonic(), 0, batches_done
        self.attempts += 1

    def end_if_recovered(self, batches_done: int) -> bool:
        """A batch completed since the outage began: Kafka is back."""
        if self.started is not None and batches_done > self.batches_at_start:
            self.started = None
            return True
        return False

    @property
    def elapsed_s(self) -> float:
        return 0.0 if self.started is None else time.monotonic() - self.started

    def next_delay_s(self) -> float:
        return min(KAFKA_BACKOFF_MAX_S, 2.0 ** min(self.attempts, 5))


class StreamJob:
    """Starts the queries, watches them, stops them cleanly, runs lake maintenance between batches."""

    def __init__(self, config: Config, paths: JobPaths, available_now: bool) -> None:
        self.config = config
        self.paths = paths
        self.available_now = available_now
        self.stopping = threading.Event()
        self.queries: list[Any] = []
        self.builders: dict[str, Callable[[], Any]] = {}
        self.restarts = 0
        self.outage = KafkaOutage(config.spark.kafka_outage_s)
        self.listener: Any = None
        self._next_maintenance = time.monotonic() + config.spark.maintenance_interval_s
        # The hourly tables close an hour when the minute windows no longer change: watermark_s after it.
        self.hourly = HourlyRollups(paths.lake, config.spark.watermark_s)

    def run(self) -> int:
        from spark_jobs.progress import ProgressListener
        from spark_jobs.session import build_session

        spark = build_session(self.config, archive_dir=self.paths.archives)
        # One job serves every monitored cluster: its progress rows name the home cluster (whose
        # servers carry the samples), and the dashboard shows them whichever cluster is picked.
        listener = self.listener = ProgressListener(self.paths.lake, self.config.cluster.name)
        spark.streams.addListener(listener)
        restore_signal_handlers = stop_on_signals(self.stopping, "stopping the queries")
        try:
            self.builders = query_builders(spark, self.config, self.paths, self.available_now)
            self.queries = [build() for build in self.builders.values()]
            return self._watch()
        finally:
            self._stop_queries()
            # On a stop request, bounded short: after an idle trigger no progress event ever comes.
            listener.wait_recorded(self.queries, timeout_s=STOP_PROGRESS_WAIT_S if self.stopping.is_set() else 15.0)
            spark.streams.removeListener(listener)
            restore_signal_handlers()
            self._maintain()

    def _watch(self) -> int:
        while not self.stopping.is_set():
            if self.outage.end_if_recovered(self.listener.batches):
                log.info("Kafka is back: batches complete again")
            failed = [q for q in self.queries if not q.isActive and q.exception() is not None]
            if failed and not (self._retry_kafka_outage(failed[0]) or self._restart_if_transient(failed[0])):
                return self._failure(failed[0])
            if all(not q.isActive for q in self.queries):
                log.info("all queries finished (available-now)" if self.available_now else "all queries stopped")
                return 0
            if time.monotonic() >= self._next_maintenance:
                self._maintain()
            self.hourly.maybe_run()
            self._wait(POLL_S)
        log.info("stop requested: stopping queries")
        return 0

    def _wait(self, seconds: float) -> None:
        """Sleep until a query ends or `seconds` pass; a failure is picked up by the next check."""
        from pyspark.errors import StreamingQueryException

        active = [q for q in self.queries if q.isActive]
        if not active:
            return
        with contextlib.suppress(StreamingQueryException):
            active[0].awaitTermination(seconds)

    def _retry_kafka_outage(self, query: Any) -> bool:
        """Restart a query the source failed because Kafka did not answer, within kafka_outage_s."""
        error = kafka_source_error(str(query.exception()))
        if error is None:
            return False
        self.outage.begin_or_continue(self.listener.batches)
        if self.outage.elapsed_s >= self.outage.limit_s:
            return False
        delay = self.outage.next_delay_s()
        log.warning(
            "query %s: Kafka unreachable for %.0f s (%s); restarting from its checkpoint in %.0f s "
            "(gives up after spark.kafka_outage_s = %g s)",
            query.name,
            self.outage.elapsed_s,
            error,
            delay,
            self.outage.limit_s,
        )
        if not self.stopping.wait(delay):
            self._restart(query)
        return True

    def _restart_if_transient(self, query: Any) -> bool:
        message = str(query.exception())
        if self.restarts >= MAX_RESTARTS or not any(marker in message for marker in TRANSIENT_FAILURES):
            return False
        self.restarts += 1
        log.warning(
            "query %s failed transiently (%s); restarting it from its checkpoint (%d/%d)",
            query.name,
            message.splitlines()[0][:200],
            self.restarts,
            MAX_RESTARTS,
        )
        self._restart(query)
        return True

    def _restart(self, query: Any) -> None:
        """Start the failed query again in its place; it resumes from its checkpoint."""
        self.queries[self.queries.index(query)] = self.builders[query.name]()

    def _failure(self, query: Any) -> int:
        message = str(query.exception())
        error = kafka_source_error(message)
        if error is not None:
            self._stop_queries()
            raise KafkaUnreachable(error)
        log.error("query %s failed: %s", query.name, message[:2000])
        return 1

    def _maintain(self) -> None:
        self._next_maintenance = time.monotonic() + self.config.spark.maintenance_interval_s
        try:
            maintain_lake(self.paths.lake, self.config.lake)
        except Exception:  # maintenance must never stop the pipeline; the next pass retries
            log.exception("lake maintenance failed")

    def _stop_queries(self) -> None:
        for query in self.queries:
            if query.isActive:
                query.stop()
                log.info("query %s stopped", query.name)


def kafka_source_error(message: str) -> str | None:
    """The source's KafkaSourceError text inside a query's failure (Spark wraps it in its own)."""
    line = next((line for line in message.splitlines() if "KafkaSourceError: " in line), None)
    return None if line is None else line.split("KafkaSourceError: ", 1)[-1].strip()


def query_builders(spark: Any, config: Config, paths: JobPaths, available_now: bool) -> dict[str, Callable[[], Any]]:
    """name -> a function that starts that query (again, after a transient failure)."""
    from spark_jobs.lake_sink import LakeWriter
    from spark_jobs.rollups import ROLLUP_TABLES, decode_table, rollups
    from spark_jobs.source import routed_samples

    records = routed_samples(spark, config)
    # Duplicate sample ids are dropped inside the stateful operator: a sample whose ts is not newer
    # than its series' newest is discarded there (the id is a hash of exactly series + ts), which
    # covers retried produces for as long as the series lives, not just within the watermark.
    # A separate dropDuplicatesWithinWatermark would need a second watermark definition on the
    # same stream, which Spark refuses ("Redefining watermark is disallowed").
    cluster_lag = {cluster.name: cluster.lag for cluster in config.clusters}
    rolled = rollups(records, config.spark.watermark_s, lag_config=config.lag, cluster_lag=cluster_lag)
    writer = LakeWriter(paths.lake, ROLLUPS_QUERY, {t: partial(decode_table, table=t) for t in ROLLUP_TABLES})
    return {ROLLUPS_QUERY: partial(_start, rolled, ROLLUPS_QUERY, writer, config, paths, available_now)}


def _start(frame: Any, name: str, writer: Any, config: Config, paths: JobPaths, available_now: bool) -> Any:
    stream = (
        frame.writeStream.queryName(name)
        .foreachBatch(writer)
        .outputMode("append")
        .option("checkpointLocation", paths.checkpoint(name))
    )
    if available_now:
        stream = stream.trigger(availableNow=True)
    else:
        stream = stream.trigger(processingTime=f"{int(config.spark.trigger_s * 1000)} milliseconds")
    query = stream.start()
    log.info("query %s started (%s)", name, "available-now" if available_now else f"every {config.spark.trigger_s:g} s")
    return query
