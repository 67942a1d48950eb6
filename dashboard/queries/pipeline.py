"""The pipeline page: collector heartbeats, scrape targets, Spark progress, dead letters.

The Spark job and the collectors serve every monitored cluster at once (their rows name the
home cluster), so the pipeline's own progress and heartbeats are not filtered by the picked cluster.
"""

from __future__ import annotations

from dashboard.queries import (
    RECENT,
    SCRAPE_DURATION,
    SCRAPED_SOURCES,
    UP,
    Frames,
    Lake,
    Scope,
    between,
    run_each,
    session,
)
from lagwatch import vocabulary
from lagwatch.lake_queries import newest_rows

HEARTBEAT_METRICS = vocabulary.names_from(vocabulary.Source.HEARTBEAT)

#: Every scrape target's newest `up` and scrape time, and its share of answered scrapes.
SQL_SCRAPE_HEALTH = f"""
SELECT source, broker, client_id,
       arg_max_null("last", window_start) FILTER (WHERE metric = '{UP}') AS up,
       avg(avg) FILTER (WHERE metric = '{UP}') AS up_ratio_1h,
       arg_max_null("last", window_start) FILTER (WHERE metric = '{SCRAPE_DURATION}') AS scrape_duration_s,
       max(window_end) AS last_seen
FROM {between("metrics_1m", RECENT)}
WHERE cluster = $cluster AND metric IN {(UP, SCRAPE_DURATION)} AND source IN {SCRAPED_SOURCES}
GROUP BY ALL ORDER BY source, broker, client_id
"""

SQL_PIPELINE_LATEST = newest_rows(
    "pipeline_progress_since($latest_start)",
    "query, batch_id, ts, input_rows_per_s, processed_rows_per_s, batch_duration_ms, watermark, freshness_s",
    key="query",
    where="ts < $end",
    newest_by="ts",
    order_by="query",
)

SQL_PIPELINE_SERIES = """
SELECT time_bucket(to_seconds($bucket_s), ts) AS time, query,
       avg(input_rows_per_s) AS input_rows_per_s, avg(processed_rows_per_s) AS processed_rows_per_s,
       avg(batch_duration_ms) AS batch_duration_ms, max(freshness_s) AS freshness_s
FROM pipeline_progress_since($start)
WHERE ts < $end
GROUP BY ALL ORDER BY time
"""

SQL_HEARTBEATS = f"""
SELECT client_id AS collector, metric, arg_max_null("last", window_start) AS value,
       avg(rate_per_s) AS rate_per_s, max(window_end) AS last_seen
FROM {between("metrics_1m", RECENT)}
WHERE source = '{vocabulary.Source.HEARTBEAT}'
  AND metric IN {HEARTBEAT_METRICS}
GROUP BY ALL ORDER BY collector, metric
"""

SQL_DEAD_LETTER_COUNTS = """
SELECT error, source_topic, count(*) AS records, min(received_at) AS first_seen, max(received_at) AS last_seen
FROM dead_letters_since($start) WHERE cluster = $cluster AND received_at < $end
GROUP BY ALL ORDER BY records DESC
"""

SQL_DEAD_LETTER_SAMPLES = """
SELECT received_at, source_topic, source_partition, source_offset, error, raw
FROM dead_letters_since($start) WHERE cluster = $cluster AND received_at < $end
ORDER BY received_at DESC LIMIT 20
"""


def load(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        return run_each(
            con,
            scope.params(),
            heartbeats=SQL_HEARTBEATS,
            scrape=SQL_SCRAPE_HEALTH,
            latest=SQL_PIPELINE_LATEST,
            series=SQL_PIPELINE_SERIES,
            dead_counts=SQL_DEAD_LETTER_COUNTS,
            dead_samples=SQL_DEAD_LETTER_SAMPLES,
        )
