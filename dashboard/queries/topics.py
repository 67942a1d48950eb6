"""The topics page: rates, partitions and end-offset growth per topic, and one topic's charts and
the groups consuming it.

Why the consumers are read per topic: the page shows one topic's consumers, and at fleet size every
topic's would be a row per group; the topic filter (a key column of lag_1m) reaches the Parquet scan."""

from __future__ import annotations

from dashboard.queries import (
    ADMIN,
    BROKER_RATE_METRICS,
    BUCKET,
    JMX,
    LATEST,
    TARGETS,
    Frames,
    Lake,
    Scope,
    between,
    run,
    session,
)
from lagwatch import lake as lakelib
from lagwatch import vocabulary
from lagwatch.lake_queries import newest_rows

(LOG_END_OFFSET,) = vocabulary.require("log_end_offset")

_LOWER_BOUND = lakelib.TimeLagMethod.LOWER_BOUND
#: Each partition of the topic ($topic)'s newest lag_1m row per group in the latest slice.
_TOPIC_PARTITIONS_LATEST = newest_rows(
    between("lag_1m", LATEST),
    "group_id, topic, lag, time_lag_s, time_lag_method, status",
    key="group_id, partition",
    where="cluster = $cluster AND topic = $topic",
)
SQL_TOPIC_GROUPS_LATEST = f"""
WITH latest AS (
{_TOPIC_PARTITIONS_LATEST})
SELECT topic, group_id, sum(lag) AS total_lag, max(lag) AS max_lag, max(time_lag_s) AS max_time_lag_s,
       CASE WHEN bool_or(time_lag_method = '{_LOWER_BOUND}') THEN '{_LOWER_BOUND}' END AS max_time_lag_method,
       string_agg(DISTINCT status, ', ' ORDER BY status) AS statuses
FROM latest GROUP BY ALL ORDER BY topic, total_lag DESC
"""

SQL_TOPIC_RATES_LATEST = f"""
WITH per_window AS (
  SELECT window_start, topic, metric, sum(rate_per_s) AS rate_per_s
  FROM {between("metrics_1m", LATEST)}
  WHERE cluster = $cluster AND source IN {JMX} AND topic IS NOT NULL AND metric IN {BROKER_RATE_METRICS}
  GROUP BY ALL
)
SELECT topic, metric, avg(rate_per_s) AS rate_per_s FROM per_window GROUP BY ALL
"""

#: End offsets at the start and at the end of the range (two short slices, not the whole range).
SQL_TOPIC_OFFSETS = f"""
WITH edges AS (
  SELECT topic, partition,
         arg_min("first", window_start) FILTER (WHERE window_start < $start + INTERVAL 10 MINUTE) AS first_offset,
         arg_max_null("last", window_start) FILTER (WHERE window_start >= $latest_start) AS last_offset
  FROM (
    SELECT * FROM {between("metrics_1m", ("$start", "$start + INTERVAL 10 MINUTE"))}
    UNION ALL SELECT * FROM {between("metrics_1m", LATEST)}
  )
  WHERE cluster = $cluster AND metric = '{LOG_END_OFFSET}' AND source = '{ADMIN}' AND topic IS NOT NULL
  GROUP BY ALL
)
SELECT topic, count(*) AS partitions, sum(last_offset) AS end_offset,
       sum(last_offset) - sum(first_offset) AS growth
FROM edges GROUP BY topic ORDER BY topic
"""

#: One scan for both charts of a topic: summed rates of the meters and the summed end offset.
SQL_TOPIC_SERIES = f"""
WITH per_window AS (
  SELECT window_start, metric, sum(rate_per_s) AS rate_per_s, sum("last") AS end_offset
  FROM {between("metrics_1m")}
  WHERE cluster = $cluster AND topic = $topic AND source IN {TARGETS}
    AND metric IN {(LOG_END_OFFSET, *BROKER_RATE_METRICS)}
  GROUP BY ALL
)
SELECT {BUCKET} AS time, metric, avg(rate_per_s) AS rate_per_s, max(end_offset) AS end_offset
FROM per_window GROUP BY ALL ORDER BY time
"""


def load(lake: Lake, scope: Scope) -> Frames:
    """The topic table: offsets beside one column of rate per meter."""
    with session(lake) as con:
        p = scope.params()
        rates = run(con, SQL_TOPIC_RATES_LATEST, **p).pivot_table(
            index="topic", columns="metric", values="rate_per_s", aggfunc="first"
        )
        rates = rates.reindex(columns=list(BROKER_RATE_METRICS)).reset_index()
        rates.columns.name = None
        offsets = run(con, SQL_TOPIC_OFFSETS, **p)
    return {"topics": offsets.merge(rates, on="topic", how="outer").sort_values("topic", ignore_index=True)}


def detail(lake: Lake, scope: Scope, topic: str) -> Frames:
    """One topic's charts (the one series scan split into rates and end offsets here) and the
    groups consuming it ("groups")."""
    with session(lake) as con:
        series = run(con, SQL_TOPIC_SERIES, topic=topic, **scope.params())
        consumers = run(con, SQL_TOPIC_GROUPS_LATEST, topic=topic, **scope.params())
    offsets = series[series["metric"] == LOG_END_OFFSET]
    return {
        "rate_series": series[series["metric"] != LOG_END_OFFSET].drop(columns="end_offset"),
        "offset_series": offsets[["time", "end_offset"]].reset_index(drop=True),
        "groups": consumers,
    }


def page(lake: Lake, scope: Scope) -> Frames:
    """What the topics page runs: the table, then the detail of the first topic (its default)."""
    frames = load(lake, scope)
    if len(frames["topics"]):
        frames.update(detail(lake, scope, str(frames["topics"]["topic"].iloc[0])))
    return frames
