"""The brokers page: health gauges per broker, meter rates, leader elections, idle ratios."""

from __future__ import annotations

from dashboard.queries import BROKER_RATE_METRICS, BUCKET, JMX, LATEST, Frames, Lake, Scope, between, run, session
from dashboard.queries.pipeline import SQL_SCRAPE_HEALTH
from lagwatch import vocabulary

HEALTH_METRICS = vocabulary.require(
    "up",
    "active_controller_count",
    "under_replicated_partitions",
    "offline_partitions",
    "under_min_isr_partitions",
    "partition_count",
    "leader_count",
    "request_handler_avg_idle_percent",
    "network_processor_avg_idle_percent",
)
IDLE_METRICS = vocabulary.require("request_handler_avg_idle_percent", "network_processor_avg_idle_percent")
(ELECTIONS,) = vocabulary.require("leader_elections_total")

SQL_BROKER_GAUGES = f"""
SELECT metric, broker, arg_max_null("last", window_start) AS value, max(window_end) AS seen
FROM {between("metrics_1m", LATEST)}
WHERE cluster = $cluster AND source IN {JMX} AND broker IS NOT NULL AND topic IS NULL
  AND metric IN {HEALTH_METRICS}
GROUP BY ALL ORDER BY metric, broker
"""

#: One scan for every per-broker chart: meter rates, election increases, idle ratios.
SQL_BROKER_SERIES = f"""
SELECT {BUCKET} AS time, broker, metric, avg(rate_per_s) AS rate_per_s, avg(avg) AS value,
       sum(rate_per_s * epoch(window_end - window_start)) AS increase
FROM {between("metrics_1m")}
WHERE cluster = $cluster AND source IN {JMX} AND broker IS NOT NULL AND topic IS NULL
  AND metric IN {(*BROKER_RATE_METRICS, ELECTIONS, *IDLE_METRICS)}
GROUP BY ALL ORDER BY time
"""


def load(lake: Lake, scope: Scope) -> Frames:
    """Everything the brokers page shows; the one series scan is split into its charts here."""
    with session(lake) as con:
        p = scope.params()
        gauges = run(con, SQL_BROKER_GAUGES, **p)
        series = run(con, SQL_BROKER_SERIES, **p)
        scrape = run(con, SQL_SCRAPE_HEALTH, **p)
    elections = series[series["metric"] == ELECTIONS]
    return {
        "gauges": gauges,
        "rates": series[series["metric"].isin(BROKER_RATE_METRICS)][["time", "broker", "metric", "rate_per_s"]],
        "idle": series[series["metric"].isin(IDLE_METRICS)][["time", "broker", "metric", "value"]],
        "elections": elections[["time", "broker", "rate_per_s", "increase"]].rename(columns={"increase": "elections"}),
        "scrape": scrape,
    }
