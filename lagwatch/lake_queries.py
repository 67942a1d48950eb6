"""SQL shapes shared by the lake's readers (the API's snapshot, the dashboard's pages).

Why here: "what is current" is asked of the lake by both readers, and it must be asked the same
way: the newest whole row per key, over a short slice of key-column time, so the filter reaches
the Parquet scan below the views' newest-wins dedupe and only the last minutes of files are read.
"""

from __future__ import annotations


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
