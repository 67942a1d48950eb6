"""The shared "newest row per key" SQL, on an in-memory DuckDB table."""

from __future__ import annotations

import duckdb

from lagwatch.lake_queries import newest_rows


def _table() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k VARCHAR, window_start INTEGER, updated_at INTEGER, v INTEGER)")
    con.execute(
        "INSERT INTO t VALUES ('a', 1, 10, 100), ('a', 2, 20, NULL), ('b', 1, 30, 300), ('b', 5, 5, 500), "
        "('c', 9, 90, 900)"
    )
    return con


def test_the_newest_whole_row_per_key_is_kept_even_with_a_null_value() -> None:
    sql = newest_rows("t", "k, window_start, v", key="k", where="window_start < 9", order_by="k")
    rows = _table().execute(sql).fetchall()
    assert rows == [("a", 2, None), ("b", 5, 500)], "a NULL in the newest row never falls back to an older value"


def test_newest_by_another_column_and_bound_parameters() -> None:
    sql = newest_rows("t", "k, v", key="k", where="window_start >= $since", newest_by="updated_at")
    rows = _table().execute(sql + "ORDER BY k\n", {"since": 1}).fetchall()
    assert rows == [("a", None), ("b", 300), ("c", 900)]
