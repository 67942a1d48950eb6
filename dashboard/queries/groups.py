"""The consumer groups page: every group's newest status and rates, and one group's drill-down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from dashboard.queries import BUCKET, IN_LATEST, IN_RANGE, Frames, Lake, Scope, run, session
from lagwatch import vocabulary
from lagwatch.lake_queries import newest_rows

if TYPE_CHECKING:
    import duckdb

(MEMBER_EPOCH,) = vocabulary.require("consumer_group_member_epoch")

#: group_status is keyed by minute (window_start); the filter on it is what reaches the Parquet
#: scan below the views' dedupe, updated_at (within that minute) then trims the edges.
SQL_GROUPS_LATEST = newest_rows(
    "group_status",
    "group_id, status, reason, rule, total_lag, max_lag, max_time_lag_s, max_time_lag_method, partitions, topics, "
    "group_state, members, rebalances, rebalancing_s, group_type, group_epoch, updated_at",
    key="group_id",
    where="cluster = $cluster AND window_start >= $recent_start - INTERVAL 1 MINUTE AND window_start < $end "
    "AND updated_at >= $recent_start AND updated_at < $end",
    newest_by="updated_at",
)


def partitions_latest(columns: str) -> str:
    """Each (group, topic, partition)'s newest lag_1m row in the latest slice (the topics page
    reads its consumers the same way)."""
    return newest_rows("lag_1m", columns, key="group_id, topic, partition", where=IN_LATEST)


#: From each partition's newest row: a group's ETA is its slowest partition's, and NULL ("not
#: catching up") as soon as one lagging partition is not catching up; rate_span_s is the
#: shortest span any partition's rates were measured over (the ETA's basis).
SQL_GROUP_RATES_LATEST = f"""
WITH latest AS (
{partitions_latest("group_id, lag, consume_rate, produce_rate, eta_s, rate_span_s")})
SELECT group_id, sum(consume_rate) AS consume_rate, sum(produce_rate) AS produce_rate,
       CASE WHEN bool_or(eta_s IS NULL AND lag > 0) THEN NULL ELSE max(eta_s) END AS eta_s,
       min(rate_span_s) AS rate_span_s
FROM latest GROUP BY group_id
"""

#: One scan for the drill-down: per bucket and partition; the page sums partitions itself.
SQL_GROUP_PARTITIONS = f"""
WITH per_window AS (
  SELECT window_start, topic || '/' || partition AS topic_partition, lag, time_lag_s, consume_rate, produce_rate
  FROM lag_1m WHERE {IN_RANGE} AND group_id = $group
)
SELECT {BUCKET} AS time, topic_partition, max(lag) AS lag, max(time_lag_s) AS time_lag_s,
       avg(consume_rate) AS consume_rate, avg(produce_rate) AS produce_rate
FROM per_window GROUP BY ALL ORDER BY time, topic_partition
"""

#: Each partition's newest row in the latest slice: its lag and status and the member owning it.
SQL_GROUP_OWNERS = newest_rows(
    "lag_1m",
    "topic, partition, lag, status, retention_margin, retention_margin_s, "
    "owner_client_id, owner_host, owner_member_id, owner_changes, owner_pending, window_start AS minute",
    key="topic, partition",
    where=f"{IN_LATEST} AND group_id = $group",
    order_by="lag DESC, topic, partition",
)

#: A consumer (KIP-848) group's member epochs in the newest minute the commit log recorded a change
#: (each change carries every member's epoch); metrics_1m keys them by client id.
SQL_GROUP_MEMBER_EPOCHS = f"""
WITH epochs AS (
  SELECT client_id, "last" AS member_epoch, window_start
  FROM metrics_1m
  WHERE {IN_LATEST} AND group_id = $group AND metric = '{MEMBER_EPOCH}' AND source = '{vocabulary.Source.COMMITLOG}'
)
SELECT client_id, member_epoch FROM epochs
QUALIFY window_start = max(window_start) OVER ()
ORDER BY client_id
"""

SQL_GROUP_STATUS_HISTORY = """
SELECT updated_at AS time, status, reason, total_lag
FROM group_status
WHERE cluster = $cluster AND window_start >= $start - INTERVAL 1 MINUTE AND window_start < $end
  AND updated_at >= $start AND updated_at < $end AND group_id = $group
ORDER BY time
"""


def table(con: duckdb.DuckDBPyConnection, p: dict[str, Any]) -> pd.DataFrame:
    """Every group's newest status with its summed rates and ETA, on an open connection (the
    overview lists the same table within its own connection)."""
    status = run(con, SQL_GROUPS_LATEST, **p)
    rates = run(con, SQL_GROUP_RATES_LATEST, **p)
    return status.merge(rates, on="group_id", how="left").sort_values("group_id", ignore_index=True)


def load(lake: Lake, scope: Scope) -> Frames:
    with session(lake) as con:
        return {"groups": table(con, scope.params())}


def detail(lake: Lake, scope: Scope, group: str) -> Frames:
    """One group's drill-down: per-partition lag, summed history, status changes, owners, epochs."""
    with session(lake) as con:
        p = scope.params()
        partitions = run(con, SQL_GROUP_PARTITIONS, group=group, **p)
        status = run(con, SQL_GROUP_STATUS_HISTORY, group=group, **p)
        owners = run(con, SQL_GROUP_OWNERS, group=group, **p)
        member_epochs = run(con, SQL_GROUP_MEMBER_EPOCHS, group=group, **p)
    history = partitions.groupby("time", as_index=False).agg(
        lag=("lag", "sum"),
        time_lag_s=("time_lag_s", "max"),
        consume_rate=("consume_rate", "sum"),
        produce_rate=("produce_rate", "sum"),
    )
    return {
        "partition_lag": partitions[["time", "topic_partition", "lag"]],
        "history": history,
        "status": status,
        "owners": owners,
        "member_epochs": member_epochs,
    }


def page(lake: Lake, scope: Scope) -> Frames:
    """What the groups page runs: the table, then the drill-down of the group with most lag."""
    frames = load(lake, scope)
    groups = frames["groups"]
    if len(groups):
        chosen = str(groups.sort_values("total_lag", ascending=False)["group_id"].iloc[0])
        frames.update(detail(lake, scope, chosen))
    return frames
