"""The overview page: broker health, cluster rates, the groups, what fires, pipeline freshness.

Why it borrows the other pages' SQL: the overview is their summary, so it asks exactly what
they ask (one statement each, one home each), within one connection. Its groups are counts and
two short lists computed in SQL over the groups page's index of newest statuses
(`groups.summary`): no frame of every group is loaded.
"""

from __future__ import annotations

from dashboard.queries import BROKER_RATE_METRICS, BUCKET, JMX, Frames, Lake, Scope, between, run_each, session
from dashboard.queries import groups as group_queries
from dashboard.queries.alerts import SQL_ALERTS_FIRING
from dashboard.queries.brokers import SQL_BROKER_GAUGES
from dashboard.queries.pipeline import SQL_PIPELINE_LATEST

SQL_CLUSTER_RATES = f"""
WITH per_window AS (
  SELECT window_start, metric, sum(rate_per_s) AS rate_per_s
  FROM {between("metrics_1m")}
  WHERE cluster = $cluster AND source IN {JMX} AND broker IS NOT NULL AND topic IS NULL
    AND metric IN {BROKER_RATE_METRICS}
  GROUP BY ALL
)
SELECT {BUCKET} AS time, metric, avg(rate_per_s) AS rate_per_s FROM per_window GROUP BY ALL ORDER BY time
"""


def load(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        p = scope.params()
        sections = run_each(
            con,
            p,
            gauges=SQL_BROKER_GAUGES,
            cluster_rates=SQL_CLUSTER_RATES,
            firing=SQL_ALERTS_FIRING,
            pipeline=SQL_PIPELINE_LATEST,
        )
        return sections | group_queries.summary(con, p)
