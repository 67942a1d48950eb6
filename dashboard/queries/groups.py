"""The consumer groups page: one page of groups (filtered and ordered worst first in SQL), their
rates, and one group's drill-down.

Why a page at a time: a fleet holds tens of thousands of groups. Choosing the newest status per
group over the last hour is the one cost that grows with the fleet, so it runs once per render,
narrow (the columns the filters and the order need), into a temporary table on the loader's own
connection; counts, filter choices and the page are cheap reads of it, and only the page's groups
have their whole rows and their lag_1m rates read. The overview asks the same index for its
counts and short lists. A drill-down over more than a day reads lag_1h for its closed hours.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from dashboard.queries import BUCKET, LATEST, Frames, Lake, Scope, between, bind, run, session
from lagwatch import vocabulary
from lagwatch.lake_hours import HOUR, hour_of, written_until
from lagwatch.lake_queries import hourly_from_minutes, hourly_rows, newest_rows

if TYPE_CHECKING:
    import duckdb

(MEMBER_EPOCH,) = vocabulary.require("consumer_group_member_epoch")
#: Rows per page of the groups table unless the reader picks another size.
PAGE_SIZE = 100
#: Rows of each of the overview's short lists of groups.
SHOWN_WORST = 10

#: The span of group_status the recent statuses are read from: it is keyed by minute (window_start),
#: so the span reaches the Parquet scan below the dedupe; updated_at (within that minute) then trims
#: the edges.
RECENT_MINUTES = ("$recent_start - INTERVAL 1 MINUTE", "$end")
UPDATED_RECENTLY = "updated_at >= $recent_start AND updated_at < $end"
GROUP_COLUMNS = (
    "group_id, status, reason, rule, total_lag, max_lag, max_time_lag_s, max_time_lag_method, partitions, topics, "
    "group_state, members, rebalances, rebalancing_s, group_type, group_epoch, updated_at"
)
#: What the rates query adds to a group's row.
RATE_COLUMNS = ("consume_rate", "produce_rate", "eta_s", "rate_span_s")

#: The temporary table one render's newest statuses go into (dropped with the connection).
INDEX_TABLE = "group_index"
#: What the index holds of each group's newest status: what the filters and the order read, and
#: its minute (so the page's whole rows are read from that minute on, not from the whole hour).
INDEX_COLUMNS = "group_id, window_start, status, total_lag, max_time_lag_s, group_type, topics"
#: Every group's newest status (by updated_at, among its minutes' newest versions) in the recent
#: slice. Why not the plain newest-wins query (SQL_INDEX_OF): that deduplicates every minute of every
#: group before picking one row per group. Here the stored rows are read as written
#: (`group_status_versions`), only two narrow columns over the whole slice, for each group's newest
#: updated_at; then only the minutes holding it are deduplicated, and their newest
#: version is the answer when it still carries that time. A group whose newest stored row a newer
#: version of its minute replaced (a rewrite that moved updated_at back or out of the slice) gets a
#: row of NULLs here, and `build_index` puts the plain query's answer in its place.
SQL_GROUP_INDEX = f"""CREATE TEMP TABLE {INDEX_TABLE} AS
WITH stored AS NOT MATERIALIZED (
  SELECT * FROM group_status_versions({", ".join(RECENT_MINUTES)}) WHERE cluster = $cluster
),
newest AS (SELECT group_id, max(updated_at) AS updated_at FROM stored WHERE {UPDATED_RECENTLY} GROUP BY group_id),
minutes AS (SELECT DISTINCT group_id, window_start FROM stored JOIN newest USING (group_id, updated_at)),
current AS (
  SELECT {INDEX_COLUMNS}, updated_at FROM stored JOIN minutes USING (group_id, window_start)
  QUALIFY row_number() OVER (PARTITION BY group_id, window_start ORDER BY version DESC) = 1
)
SELECT newest.group_id, {", ".join(f"current.{c}" for c in INDEX_COLUMNS.split(", ")[1:])}
FROM newest LEFT JOIN current ON current.group_id = newest.group_id AND current.updated_at = newest.updated_at
QUALIFY row_number() OVER (PARTITION BY newest.group_id) = 1
"""  # fmt: skip

#: The plain newest-wins answer for some groups ($ids): every minute deduplicated, then the newest
#: by updated_at. What SQL_GROUP_INDEX must equal; it runs for the groups that query could not settle.
SQL_INDEX_OF = newest_rows(
    between("group_status", RECENT_MINUTES),
    INDEX_COLUMNS,
    key="group_id",
    where=f"cluster = $cluster AND {UPDATED_RECENTLY} AND list_contains($ids::VARCHAR[], group_id)",
    newest_by="updated_at",
)

#: group_status.topics is the group's topics, sorted and comma-joined (a Kafka topic name holds
#: no comma); the search is a plain substring of the group id, either case.
MATCHES = """($search = '' OR contains(lower(group_id), lower($search)))
  AND (len($statuses::VARCHAR[]) = 0 OR list_contains($statuses::VARCHAR[], status))
  AND (len($types::VARCHAR[]) = 0 OR list_contains($types::VARCHAR[], group_type))
  AND (len($topics::VARCHAR[]) = 0 OR list_has_any(string_split(topics, ','), $topics::VARCHAR[]))"""
#: Worst status first (an unknown one last).
WORST_STATUS_FIRST = f"list_position({list(reversed(vocabulary.STATUS_ORDER))}, status) NULLS LAST"
#: Worst status first, then the most lag; the group id makes pages stable.
WORST_FIRST = f"{WORST_STATUS_FIRST}, total_lag DESC NULLS LAST, group_id"
#: The overview's lists (ui.by_time_lag_worst_first's rule): a lagging group whose time lag is
#: unknown first (it may be the worst), then the largest time lag, then the most lag.
WORST_TIME_LAG_FIRST = (
    "(max_time_lag_s IS NULL AND coalesce(total_lag, 0) > 0) DESC, coalesce(max_time_lag_s, -1) DESC, "
    "total_lag DESC NULLS LAST, group_id"
)
MOST_LAG_FIRST = "total_lag DESC NULLS LAST, group_id"

#: The totals and the filters' choices (every status, type and topic among all the groups).
SQL_GROUP_COUNTS = f"""
SELECT count(*) AS groups, count(*) FILTER (WHERE {MATCHES}) AS matching,
       coalesce(list_sort(list_distinct(list(status))), []) AS statuses,
       coalesce(list_sort(list_distinct(list(group_type))), []) AS group_types,
       coalesce(list_sort(list_filter(list_distinct(flatten(list(string_split(topics, ',')))), lambda t: t <> '')), [])
         AS topic_names
FROM {INDEX_TABLE}
"""

SQL_GROUP_PAGE = f"""
SELECT group_id, window_start FROM {INDEX_TABLE} WHERE {MATCHES}
ORDER BY {WORST_FIRST} LIMIT $limit OFFSET $offset
"""

#: The overview's counts: groups and their summed lag per status, the worst status first.
SQL_STATUS_COUNTS = f"""
SELECT status, count(*) AS groups, sum(total_lag)::BIGINT AS total_lag FROM {INDEX_TABLE}
GROUP BY status ORDER BY {WORST_STATUS_FIRST}, status
"""
SQL_WORST_TIME_LAG = f"SELECT group_id, window_start FROM {INDEX_TABLE} ORDER BY {WORST_TIME_LAG_FIRST} LIMIT $limit"
SQL_MOST_LAG = f"SELECT group_id, window_start FROM {INDEX_TABLE} ORDER BY {MOST_LAG_FIRST} LIMIT $limit"

#: The whole newest rows of some groups ($ids), read from the oldest of their newest minutes
#: ($since) on: the same rows the index chose, at the cost of a few minutes of files.
SQL_GROUP_ROWS = newest_rows(
    between("group_status", (f"greatest($since, {RECENT_MINUTES[0]})", "$end")),
    GROUP_COLUMNS,
    key="group_id",
    where=f"cluster = $cluster AND {UPDATED_RECENTLY} AND list_contains($ids::VARCHAR[], group_id)",
    newest_by="updated_at",
)


def group_rates(source: str, where: str) -> str:
    """Summed rates and the ETA per group, from each partition's newest lag_1m row (of `source`) `where` keeps.

    A group's ETA is its slowest partition's, and NULL ("not catching up") as soon as one lagging
    partition is not catching up; rate_span_s is the shortest span any partition's rates were
    measured over (the ETA's basis).
    """
    columns = "group_id, lag, consume_rate, produce_rate, eta_s, rate_span_s"
    return f"""
WITH latest AS (
{newest_rows(source, columns, key="group_id, topic, partition", where=where)})
SELECT group_id, sum(consume_rate) AS consume_rate, sum(produce_rate) AS produce_rate,
       CASE WHEN bool_or(eta_s IS NULL AND lag > 0) THEN NULL ELSE max(eta_s) END AS eta_s,
       min(rate_span_s) AS rate_span_s
FROM latest GROUP BY group_id
"""


#: Rates for some groups only ($ids): the filter on the key column reaches the Parquet scan.
SQL_GROUP_RATES_FOR = group_rates(
    between("lag_1m", LATEST), "cluster = $cluster AND list_contains($ids::VARCHAR[], group_id)"
)

#: One scan for the drill-down: per bucket and partition; the page sums partitions itself.
SQL_GROUP_PARTITIONS = f"""
WITH per_window AS (
  SELECT window_start, topic || '/' || partition AS topic_partition, lag, time_lag_s, consume_rate, produce_rate
  FROM {between("lag_1m")} WHERE cluster = $cluster AND group_id = $group
)
SELECT {BUCKET} AS time, topic_partition, max(lag) AS lag, max(time_lag_s) AS time_lag_s,
       avg(consume_rate) AS consume_rate, avg(produce_rate) AS produce_rate
FROM per_window GROUP BY ALL ORDER BY time, topic_partition
"""

#: The same columns over more than a day, from lag_1h rows: the stored closed hours in
#: [$hour_from, $minutes_from), the minute rows aggregated the same way up to $hour_to, and the
#: partial hours at the range's edges ([$start, $hour_from), [$hour_to, $end)) from minute rows.
#: An hour's max_lag is the largest lag_max of its minutes (the largest lag observed, which can
#: exceed the minute-end lag that shorter ranges plot). Rates are each partition's offset advance
#: between the ends of consecutive buckets (NULL for the first bucket and across a rewind).
_PARTIAL_HOURS = "cluster = $cluster AND group_id = $group AND window_start >= {start} AND window_start < {end}"
SQL_GROUP_PARTITIONS_HOURLY = f"""
WITH hours AS (
  SELECT * FROM (
{hourly_rows("lag_1h", "$hour_from", "$hour_to", "$minutes_from")}) WHERE cluster = $cluster AND group_id = $group
  UNION ALL
  SELECT * FROM (
{hourly_from_minutes("lag_1h", _PARTIAL_HOURS.format(start="$start", end="$hour_from"))})
  UNION ALL
  SELECT * FROM (
{hourly_from_minutes("lag_1h", _PARTIAL_HOURS.format(start="$hour_to", end="$end"))})
),
buckets AS (
  SELECT time_bucket(to_seconds($bucket_s), hour_start) AS time, topic || '/' || partition AS topic_partition,
         max(max_lag) AS lag, max(max_time_lag_s) AS time_lag_s,
         arg_max(last_committed_offset, hour_start) AS committed, arg_max(last_end_offset, hour_start) AS produced
  FROM hours GROUP BY ALL
),
ends AS (SELECT *, least(time + to_seconds($bucket_s), $end) AS bucket_end FROM buckets)
SELECT time, topic_partition, lag, time_lag_s,
       CASE WHEN committed >= lag(committed) OVER w
            THEN (committed - lag(committed) OVER w) / epoch(bucket_end - lag(bucket_end) OVER w) END AS consume_rate,
       CASE WHEN produced >= lag(produced) OVER w
            THEN (produced - lag(produced) OVER w) / epoch(bucket_end - lag(bucket_end) OVER w) END AS produce_rate
FROM ends WINDOW w AS (PARTITION BY topic_partition ORDER BY time)
ORDER BY time, topic_partition
"""

#: Each partition's newest row in the latest slice: its lag and status and the member owning it.
SQL_GROUP_OWNERS = newest_rows(
    between("lag_1m", LATEST),
    "topic, partition, lag, status, retention_margin, retention_margin_s, "
    "owner_client_id, owner_host, owner_member_id, owner_changes, owner_pending, window_start AS minute",
    key="topic, partition",
    where="cluster = $cluster AND group_id = $group",
    order_by="lag DESC, topic, partition",
)

#: A consumer (KIP-848) group's member epochs in the newest minute the commit log recorded a change
#: (each change carries every member's epoch); metrics_1m keys them by client id.
SQL_GROUP_MEMBER_EPOCHS = f"""
WITH epochs AS (
  SELECT client_id, "last" AS member_epoch, window_start
  FROM {between("metrics_1m", LATEST)}
  WHERE cluster = $cluster AND group_id = $group
    AND metric = '{MEMBER_EPOCH}' AND source = '{vocabulary.Source.COMMITLOG}'
)
SELECT client_id, member_epoch FROM epochs
QUALIFY window_start = max(window_start) OVER ()
ORDER BY client_id
"""

#: The status timeline's points: per chart bucket, each status the group was in, at the first
#: minute it was (its reason then, the bucket's largest lag in it). Why per bucket: a week is ten
#: thousand minute rows, more markers than the chart has pixels; a bucket of one minute (ranges up
#: to a few hours) keeps every row.
SQL_GROUP_STATUS_HISTORY = f"""
SELECT min(updated_at) AS time, status, arg_min(reason, updated_at) AS reason, max(total_lag) AS total_lag
FROM {between("group_status", ("$start - INTERVAL 1 MINUTE", "$end"))}
WHERE cluster = $cluster AND updated_at >= $start AND updated_at < $end AND group_id = $group
GROUP BY time_bucket(to_seconds($bucket_s), updated_at), status
ORDER BY time, status
"""


@dataclass(frozen=True)
class GroupFilter:
    """What the reader narrowed the table to; an empty field keeps every group."""

    search: str = ""
    statuses: tuple[str, ...] = ()
    group_types: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {
            "search": self.search,
            "statuses": list(self.statuses),
            "types": list(self.group_types),
            "topics": list(self.topics),
        }


def last_offset(matching: int, size: int) -> int:
    """The first row of the last page (0 when nothing matches)."""
    return max(0, (matching - 1) // size * size)


def build_index(con: duckdb.DuckDBPyConnection, p: dict[str, Any]) -> None:
    """Every group's newest status in the recent slice, into INDEX_TABLE on `con`: SQL_GROUP_INDEX,
    and SQL_INDEX_OF for the groups it left unsettled (none, unless a minute's rewrite moved its
    updated_at back or out of the slice)."""
    con.execute(SQL_GROUP_INDEX, bind(SQL_GROUP_INDEX, p))
    unsettled = con.execute(f"DELETE FROM {INDEX_TABLE} WHERE window_start IS NULL RETURNING group_id").fetchall()
    if unsettled:
        insert = f"INSERT INTO {INDEX_TABLE}\n{SQL_INDEX_OF}"
        con.execute(insert, bind(insert, p | {"ids": [group_id for (group_id,) in unsettled]}))


def listing(lake: Lake, scope: Scope, chosen: GroupFilter, offset: int = 0, size: int = PAGE_SIZE) -> Frames:
    """One page of the groups `chosen` keeps, worst first, with their rates ("groups"), and the
    totals and filter choices ("summary": one row; its offset is the page's, pulled back to the
    last page when the filters left fewer groups than `offset`)."""
    with session(lake) as con:
        p = scope.params() | chosen.params()
        build_index(con, p)
        summary = run(con, SQL_GROUP_COUNTS, **p)
        offset = min(max(0, offset), last_offset(int(summary["matching"].iloc[0]), size))
        shown = run(con, SQL_GROUP_PAGE, limit=size, offset=offset, **p)
        groups = _whole_rows(con, p, shown["group_id"].tolist(), shown["window_start"].min())
    return {"groups": groups, "summary": summary.assign(offset=offset, size=size)}


def one(lake: Lake, scope: Scope, group: str) -> pd.DataFrame:
    """One group's newest status and rates (no row when it has none in the last hour): the
    drill-down of a group the shown page does not hold."""
    with session(lake) as con:
        p = scope.params()
        return _whole_rows(con, p, [group], p["recent_start"] - dt.timedelta(minutes=1))


def _whole_rows(con: duckdb.DuckDBPyConnection, p: dict[str, Any], ids: list[str], since: Any) -> pd.DataFrame:
    """The groups `ids` in that order: their newest status rows with their rates."""
    if not ids:
        return pd.DataFrame(columns=[*GROUP_COLUMNS.split(", "), *RATE_COLUMNS])
    status = run(con, SQL_GROUP_ROWS, ids=ids, since=since, **p)
    rates = run(con, SQL_GROUP_RATES_FOR, ids=ids, **p)
    ordered = pd.DataFrame({"group_id": ids})
    return ordered.merge(status, on="group_id").merge(rates, on="group_id", how="left")


def summary(con: duckdb.DuckDBPyConnection, p: dict[str, Any], shown: int = SHOWN_WORST) -> Frames:
    """The overview's groups on an open connection: groups and lag per status ("group_counts"), and
    the `shown` worst by time lag ("worst_time_lag") and by offset lag ("most_lag") with their whole
    rows. Only the index is built over every group; whole rows and rates are read for the listed."""
    build_index(con, p)
    counts = run(con, SQL_STATUS_COUNTS)
    lists = {
        "worst_time_lag": run(con, SQL_WORST_TIME_LAG, limit=shown),
        "most_lag": run(con, SQL_MOST_LAG, limit=shown),
    }
    listed = pd.concat(lists.values(), ignore_index=True)
    rows = _whole_rows(con, p, list(dict.fromkeys(listed["group_id"])), listed["window_start"].min())
    ordered = {name: frame[["group_id"]].merge(rows, on="group_id") for name, frame in lists.items()}
    return {"group_counts": counts} | ordered


def hourly_params(lake: Lake, scope: Scope) -> dict[str, Any]:
    """The bounds SQL_GROUP_PARTITIONS_HOURLY needs: the whole hours inside the range, where the
    stored lag_1h rows end, and a bucket of whole hours."""
    hour_from = hour_of(scope.start) if hour_of(scope.start) == scope.start else hour_of(scope.start) + HOUR
    hour_to = max(hour_from, hour_of(scope.end))
    return {
        "hour_from": hour_from,
        "hour_to": hour_to,
        "minutes_from": written_until(lake.path, "lag_1h", hour_from, hour_to),
        "bucket_s": scope.hourly_bucket_s,
    }


def partitions_of(con: duckdb.DuckDBPyConnection, lake: Lake, scope: Scope, group: str) -> pd.DataFrame:
    """Lag per bucket and partition over the range: minute rows up to HOURLY_AFTER, else hourly rows."""
    p = scope.params() | {"group": group}
    if scope.hourly:
        return run(con, SQL_GROUP_PARTITIONS_HOURLY, **(p | hourly_params(lake, scope)))
    return run(con, SQL_GROUP_PARTITIONS, **p)


def detail(lake: Lake, scope: Scope, group: str) -> Frames:
    """One group's drill-down: per-partition lag, summed history, status changes, owners, epochs."""
    with session(lake) as con:
        p = scope.params()
        partitions = partitions_of(con, lake, scope, group)
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


def most_lag(groups: pd.DataFrame) -> list[str]:
    """Group ids, the most lag first: the drill-down's choices, its default first."""
    return groups.sort_values("total_lag", ascending=False, kind="stable")["group_id"].tolist()


def page(lake: Lake, scope: Scope) -> Frames:
    """What the groups page runs as opened: the first page unfiltered, then the drill-down of
    the group on it with most lag."""
    frames = listing(lake, scope, GroupFilter())
    if len(frames["groups"]):
        frames.update(detail(lake, scope, most_lag(frames["groups"])[0]))
    return frames
