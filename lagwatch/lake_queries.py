"""SQL shapes shared by the lake's readers (the API's snapshot, the dashboard's pages).

Why here: "what is current" is asked of the lake by both readers, and it must be asked the same
way: the newest whole row per key, over a short slice of key-column time, so the filter reaches
the Parquet scan below the views' newest-wins dedupe and only the last minutes of files are read.
Likewise an hourly row (group_status_1h, lag_1h) has one definition, :func:`hourly_from_minutes`:
the job's writer stores it per closed hour, and a reader computes the open hour with it.
"""

from __future__ import annotations

from lagwatch.lake import written_columns
from lagwatch.lake_hours import HOURLY_SOURCES
from lagwatch.vocabulary import STATUS_ORDER


def newest_rows(
    table: str, columns: str, key: str, where: str, newest_by: str = "window_start", order_by: str = ""
) -> str:
    """SQL for `columns` of the newest row (by `newest_by`) per `key` of `table`, among the rows `where` keeps.

    Whole rows, not a per-column arg_max: that would skip a NULL and bring back an older row's
    value. `where` should bound a key column (window_start) so DuckDB reads only a short slice.
    The text ends with a newline, so a caller may wrap it in a CTE.
    """
    sql = (
        f"SELECT {columns}\n"
        f"FROM {table}\n"
        f"WHERE {where}\n"
        f"QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY {newest_by} DESC) = 1\n"
    )
    return f"{sql}ORDER BY {order_by}\n" if order_by else sql


def _worst_status(status: str) -> str:
    """The most severe of `status` over a group of rows, by STATUS_ORDER (an unknown status never wins)."""
    order = "[" + ", ".join(f"'{name}'" for name in STATUS_ORDER) + "]"
    return f"list_extract({order}, max(list_position({order}, {status})))"


#: The UTC hour a minute row belongs to, in any session time zone.
_HOUR_OF_WINDOW = "to_timestamp(floor(epoch(window_start) / 3600) * 3600)"

#: hourly table → (its key beyond hour_start, its aggregates, the newest minute row's columns as last_…).
_HOURLY_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]] = {
    "group_status_1h": (
        ("cluster", "group_id"),
        (
            f"{_worst_status('status')} AS worst_status",
            "max(total_lag) AS max_total_lag",
            "max(max_lag) AS max_max_lag",
            "max(max_time_lag_s) AS max_time_lag_s",
            "max(rebalances) AS rebalances",
            "count(*) AS minutes",
        ),
        {
            "last_status": "status",
            "last_reason": "reason",
            "last_total_lag": "total_lag",
            "group_type": "group_type",
        },
    ),
    "lag_1h": (
        ("cluster", "group_id", "topic", "partition"),
        (
            "max(lag_max) AS max_lag",
            "max(time_lag_s) AS max_time_lag_s",
            f"{_worst_status('status')} AS worst_status",
            "count(*) AS minutes",
        ),
        {"last_lag": "lag", "last_committed_offset": "committed_offset", "last_end_offset": "end_offset"},
    ),
}


def hourly_from_minutes(hourly: str, where: str) -> str:
    """SQL for `hourly`'s rows (every column but version, in the table's order) aggregated from its
    minute view's rows that `where` keeps, ordered by key.

    The newest minute row's values are taken as one struct (max_by on window_start), so a NULL in
    the newest row stays NULL instead of an older row's value showing through. This is the one
    definition of an hourly row: the writer stores it, and :func:`hourly_rows` computes it for the
    hours not written yet.
    """
    keys, aggregates, last = _HOURLY_SHAPES[hourly]
    newest = "{" + ", ".join(f"'{name}': {column}" for name, column in last.items()) + "}"
    inner = (
        f"SELECT {', '.join(keys)}, {_HOUR_OF_WINDOW} AS hour_start, {', '.join(aggregates)}, "
        f"max_by({newest}, window_start) AS newest\n"
        f"FROM {HOURLY_SOURCES[hourly]}\n"
        f"WHERE {where}\n"
        f"GROUP BY ALL\n"
    )
    columns = [f"newest.{name} AS {name}" if name in last else name for name in written_columns(hourly)]
    return f"SELECT {', '.join(columns)}\nFROM (\n{inner})\nORDER BY {', '.join(keys)}, hour_start\n"


def hourly_rows(hourly: str, start: str, end: str, minutes_from: str) -> str:
    """SQL for `hourly`'s rows of the hours in [start, end): the stored rows before `minutes_from`,
    then the minute rows from it on, aggregated as the writer does (the open hour, and any closed
    hour not written yet).

    The arguments are SQL expressions for whole UTC hours (literals or parameters, so the bounds
    reach the Parquet scans below the views' dedupe). `minutes_from` is usually
    ``lagwatch.lake_hours.written_until(...)``: the hour after the newest one written in the range.
    """
    columns = ", ".join(written_columns(hourly))
    minutes = hourly_from_minutes(hourly, f"window_start >= greatest({start}, {minutes_from}) AND window_start < {end}")
    return (
        f"SELECT {columns}\nFROM {hourly}\n"
        f"WHERE hour_start >= {start} AND hour_start < least({end}, {minutes_from})\n"
        f"UNION ALL\n"
        f"SELECT {columns}\nFROM (\n{minutes})\n"
    )
