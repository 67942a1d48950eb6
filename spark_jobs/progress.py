"""pipeline_progress rows: one per micro-batch of every query, from Spark's own progress reports.

Why a StreamingQueryListener: Spark calls it in the driver after each batch has committed, so
"the newest event time written" is known to be in the lake by then, and freshness (report time
minus that event time) is what an analyst waiting for a sample actually experiences.

Input rows are Kafka records. Spark's own count is of the rows its source yielded, and the job
reads records packed thousands to a row (``packed.py``), so the query counts the records with
an observed metric (:func:`observe_input_records`) and the rates are scaled to it.

The listener takes each progress report as its JSON, in two calls into the JVM
(:class:`_ProgressAsJson`): PySpark's own wrapper walks every field of the report through
Py4J, dozens of calls per batch, plus an idle event every few seconds, for a row that needs
the JSON's few fields.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from lagwatch import lake as lakelib

log = logging.getLogger(__name__)

#: The observed metric (``DataFrame.observe``) that counts a batch's input records.
INPUT_RECORDS = "input_records"


def observe_input_records(frame: Any, count_column: str) -> Any:
    """``frame`` reporting, per batch, the sum of ``count_column`` as its input records."""
    from pyspark.sql import functions as F

    return frame.observe(INPUT_RECORDS, F.coalesce(F.sum(count_column), F.lit(0)).alias("records"))


def _parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


def progress_row(progress: Any, cluster: str) -> dict[str, Any]:
    """A pipeline_progress row from a StreamingQueryProgress (or its JSON-like dict)."""
    data = progress if isinstance(progress, dict) else _progress_dict(progress)
    reported = _parse_time(data.get("timestamp")) or lakelib.utc_now()
    event_time = data.get("eventTime") or {}
    newest = _parse_time(event_time.get("max"))
    duration = (data.get("durationMs") or {}).get("triggerExecution")
    rows = int(data.get("numInputRows") or 0)
    records = _observed_records(data)
    scale = 1.0 if records is None else (records / rows if rows else 0.0)
    return {
        "cluster": cluster,
        "query": data.get("name") or str(data.get("id")),
        "batch_id": int(data["batchId"]),
        "ts": reported,
        "input_rows": rows if records is None else records,
        "input_rows_per_s": _scaled(data.get("inputRowsPerSecond"), scale),
        "processed_rows_per_s": _scaled(data.get("processedRowsPerSecond"), scale),
        "batch_duration_ms": None if duration is None else int(duration),
        "watermark": _parse_time(event_time.get("watermark")),
        "freshness_s": None if newest is None else max(0.0, (lakelib.utc_now() - newest).total_seconds()),
    }


def _observed_records(data: dict[str, Any]) -> int | None:
    """The batch's records as :func:`observe_input_records` counted them (None: not observed)."""
    observed = (data.get("observedMetrics") or {}).get(INPUT_RECORDS)
    if observed is None:
        return None
    # a Row in the listener's progress object, a plain dict in its JSON form
    records = (observed.asDict() if hasattr(observed, "asDict") else observed).get("records")
    return None if records is None else int(records)


def _scaled(value: Any, scale: float) -> float | None:
    number = _number(value)
    return None if number is None else number * scale


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _progress_dict(progress: Any) -> dict[str, Any]:
    import json

    return json.loads(progress.json)


class ProgressListener(StreamingQueryListener):
    """Writes a pipeline_progress row and logs one progress line per batch that read rows."""

    def __init__(self, lake: str | Path, cluster: str) -> None:
        self.lake = Path(lake)
        self.cluster = cluster
        self.batches = 0
        #: query name -> newest batch id recorded (the job waits for it before exiting)
        self.recorded: dict[str, int] = {}

    def onQueryStarted(self, event: Any) -> None:
        log.info("query %s started (id %s)", event.name, event.id)

    def onQueryProgress(self, event: Any) -> None:
        try:
            row = progress_row(event.progress, self.cluster)
            self.batches += 1
            self.recorded[row["query"]] = max(self.recorded.get(row["query"], -1), row["batch_id"])
            lakelib.write_rows(
                self.lake,
                "pipeline_progress",
                lakelib.rows_to_arrow("pipeline_progress", [{**row, "version": row["batch_id"]}]),
                file_stem=f"b{row['batch_id']:012d}-progress-{row['query']}",
            )
            log.info(
                "%s batch %d: %d rows, %.0f rows/s, %s ms, freshness %s",
                row["query"],
                row["batch_id"],
                row["input_rows"],
                row["processed_rows_per_s"] or 0.0,
                row["batch_duration_ms"],
                "-" if row["freshness_s"] is None else f"{row['freshness_s']:.1f} s",
            )
            if log.isEnabledFor(logging.DEBUG):  # where a batch's time went, for `--log-level DEBUG`
                progress = event.progress if isinstance(event.progress, dict) else _progress_dict(event.progress)
                log.debug("%s batch %d durations (ms): %s", row["query"], row["batch_id"], progress.get("durationMs"))
        except Exception:  # a progress row must never take the pipeline down
            log.exception("could not record streaming progress")

    def wait_recorded(self, queries: list[Any], timeout_s: float = 15.0) -> None:
        """Progress events arrive asynchronously: wait until every finished query's last batch is recorded."""
        import time

        deadline = time.monotonic() + timeout_s
        for query in queries:
            last = query.lastProgress
            while last and self.recorded.get(query.name, -1) < last["batchId"] and time.monotonic() < deadline:
                time.sleep(0.1)

    def onQueryIdle(self, event: Any) -> None:
        pass

    @property
    def _jlistener(self) -> Any:
        """The JVM-side listener PySpark registers for us (``StreamingQueryManager.addListener``),
        here with :class:`_ProgressAsJson` between it and this listener."""
        if not hasattr(self, "_json_jlistener"):
            from pyspark import SparkContext

            self._json_jlistener = SparkContext._jvm.PythonStreamingQueryListenerWrapper(_ProgressAsJson(self))
        return self._json_jlistener

    def onQueryTerminated(self, event: Any) -> None:
        if event.exception:
            log.error("query %s failed: %s", event.id, event.exception.splitlines()[0])
        else:
            log.info("query %s stopped", event.id)


class _ProgressAsJson:
    """The Java interface PySpark's listener wrapper calls, answering a progress event from its
    JSON (two Py4J calls) and an idle event with none; start and end, once per query, as PySpark does."""

    def __init__(self, listener: ProgressListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        from pyspark.sql.streaming.listener import QueryStartedEvent

        self.listener.onQueryStarted(QueryStartedEvent.fromJObject(jevent))

    def onQueryProgress(self, jevent: Any) -> None:
        self.listener.onQueryProgress(SimpleNamespace(progress=json.loads(jevent.progress().json())))

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        from pyspark.sql.streaming.listener import QueryTerminatedEvent

        self.listener.onQueryTerminated(QueryTerminatedEvent.fromJObject(jevent))

    class Java:
        implements = ("org.apache.spark.sql.streaming.PythonStreamingQueryListener",)
